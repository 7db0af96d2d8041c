// The cos and sin of every RoPE angle of a step, as the CPU backend computes them: a one-node native
// plan rotates the vector (1, 0, 1, 0, ...), and the rotation of each (1, 0) pair is exactly its
// (cos, sin), so the GPU rotates with the CPU's very values. Those are glibc's cosf and sinf of
// ggml's float32 angles, which nothing in JS reproduces (Math.cos rounded to float32 differs from
// them in about 2.5% of angles), and GPU sin/cos are only accurate to 2^-11. The addon is loaded
// anyway: it maps the model file.
import { GgmlType } from '../../gguf/ggml-type.js';
import { GraphBuilder } from '../../model/graph.js';
import { native, type NativePlan } from '../../native/binding.js';
import { toNativeGraph } from '../native-graph.js';

export interface RopeAngles {
  nRot: number;
  freqBase: number;
  freqScale: number;
  freqFactors?: Float32Array;
}

export class RopeTable {
  private readonly plan: NativePlan;
  private readonly tokens: Int32Array;

  constructor(readonly angles: RopeAngles, contextSize: number, maxBatch: number) {
    const { nRot, freqBase, freqScale, freqFactors } = angles;
    const unit = Float32Array.from({ length: nRot }, (_, i) => (i % 2 === 0 ? 1 : 0));
    const data = (a: Float32Array) => ({ buffer: a.buffer as ArrayBuffer, byteOffset: a.byteOffset, byteLength: a.byteLength });
    const g = new GraphBuilder();
    const x = g.getRows('unit', g.constant('unit', GgmlType.F32, nRot, 1, data(unit)), g.tokens());
    const ff = freqFactors ? g.constant('freq_factors', GgmlType.F32, nRot / 2, 1, data(freqFactors)) : undefined;
    const out = g.rope('cos_sin', x, { nHeads: 1, headDim: nRot, nRot, neox: false, freqBase, freqScale, ...(ff !== undefined ? { freqFactors: ff } : {}) });
    this.plan = new (native().Plan)(toNativeGraph(g.build(out)), { threads: 1, slots: 1, contextSize, maxBatch, kvType: GgmlType.F32 });
    this.tokens = new Int32Array(maxBatch);
  }

  /** Writes (cos, sin) pairs, (positions, nRot / 2), into `out`. */
  fill(positions: Int32Array, out: Float32Array): Promise<void> {
    return this.plan.forward(this.tokens.subarray(0, positions.length), positions, 0, true, out);
  }

  dispose(): void {
    this.plan.dispose();
  }
}
