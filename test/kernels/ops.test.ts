// Each native op, run as a one-op plan, against its TypeScript reference on random inputs.
// Activations are fed through get_rows of F32 tables, so every op sees per-token rows exactly as
// in a model, and a second forward step exercises the KV cache.
import { beforeAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';
import { native } from '../../src/native/binding.js';
import { add as refAdd } from '../../src/reference/add.js';
import { attention as refAttention } from '../../src/reference/attention.js';
import { getRows as refGetRows } from '../../src/reference/get-rows.js';
import { dequantize, quantize } from '../../src/reference/quantize.js';
import { rmsNorm as refRmsNorm } from '../../src/reference/rms-norm.js';
import { rope as refRope } from '../../src/reference/rope.js';
import { swiglu as refSwiglu } from '../../src/reference/swiglu.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { OP_TOLERANCES } from './tolerances.js';

const data = (bytes: ArrayBufferView): WeightData => ({ buffer: bytes.buffer as ArrayBuffer, byteOffset: bytes.byteOffset, byteLength: bytes.byteLength });
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Runs `build` as a plan over `steps` (tokens and positions per forward step); returns each step's output. */
async function runSteps(
  build: (g: GraphBuilder, tokens: number) => number,
  steps: Array<{ tokens: number[]; positions: number[] }>,
  threads = 2,
): Promise<Float32Array[]> {
  const g = new GraphBuilder();
  const out = build(g, g.tokens());
  const graph = g.build(out);
  const compiled = await new CpuBackend().compile(graph, { slots: 1, contextSize: 4096, maxBatch: 16, kvCacheType: 'f32', threads });
  try {
    const results: Float32Array[] = [];
    for (const s of steps) {
      const y = new Float32Array(s.tokens.length * compiled.outputWidth);
      await compiled.forward(Int32Array.from(s.tokens), Int32Array.from(s.positions), 0, true, y);
      results.push(y);
    }
    return results;
  } finally {
    compiled.dispose();
  }
}

/** An F32 table of `rows` x `cols` whose row i is fed as the activation of token id i. */
function table(g: GraphBuilder, values: Float32Array, cols: number): number {
  return g.constant('table', GgmlType.F32, cols, values.length / cols, data(values));
}

beforeAll(() => native().setKernelLevel('best'));

describe('native ops match the TypeScript reference', () => {
  const r = prng(7);

  it('get_rows dequantizes rows of every weight type', async () => {
    for (const type of [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K]) {
      const cols = 256, rows = 6;
      const q = quantize(type, gaussians(r, rows * cols));
      const ids = [5, 0, 3, 3];
      const [y] = await runSteps((g, t) => g.getRows('x', g.constant('t', type, cols, rows, data(q)), t), [{ tokens: ids, positions: range(4) }]);
      const ref = refGetRows((row) => dequantize(type, q.subarray(row * (q.length / rows), (row + 1) * (q.length / rows)), cols), rows, cols, ids);
      expect(y, `type ${GgmlType[type]}`).toEqual(ref);
    }
  });

  it('rms_norm over rows and over head groups', async () => {
    for (const [cols, group] of [[96, 96], [128, 32]] as const) {
      const x = gaussians(r, 5 * cols, 3);
      const w = gaussians(r, group);
      const [y] = await runSteps((g, t) => g.rmsNorm('n', g.getRows('x', table(g, x, cols), t), g.constant('w', GgmlType.F32, group, 1, data(w)), 1e-5, group), [{ tokens: range(5), positions: range(5) }]);
      expect(maxRelError(y!, refRmsNorm(x, w, (5 * cols) / group, group, 1e-5))).toBeLessThan(OP_TOLERANCES.rmsNorm);
    }
  });

  it('rope, normal and neox, with and without frequency factors', async () => {
    const nHeads = 3, headDim = 16, n = 4;
    const x = gaussians(r, n * nHeads * headDim);
    const positions = [0, 7, 100, 3000];
    for (const neox of [false, true]) {
      for (const nRot of [16, 8]) {
        for (const factors of [undefined, Float32Array.from(range(nRot / 2), (i) => 1 + i / 3)]) {
          const [y] = await runSteps((g, t) => {
            const ff = factors ? g.constant('ff', GgmlType.F32, nRot / 2, 1, data(factors)) : undefined;
            return g.rope('r', g.getRows('x', table(g, x, nHeads * headDim), t), { nHeads, headDim, nRot, neox, freqBase: 10000, freqScale: 0.5, ...(ff !== undefined ? { freqFactors: ff } : {}) });
          }, [{ tokens: range(n), positions }]);
          const ref = refRope(x, n, nHeads, headDim, Int32Array.from(positions), { nRot, mode: neox ? 'neox' : 'normal', freqBase: 10000, freqScale: 0.5, ...(factors ? { freqFactors: factors } : {}) });
          expect(maxRelError(y!, ref), `neox=${neox} nRot=${nRot}`).toBeLessThan(OP_TOLERANCES.rope);
        }
      }
    }
  });

  it('attention with GQA over a prefill step and a decode step', async () => {
    const nHeads = 4, nKv = 2, headDim = 8, total = 7;
    const q = gaussians(r, total * nHeads * headDim);
    const k = gaussians(r, total * nKv * headDim);
    const v = gaussians(r, total * nKv * headDim);
    const scale = 1 / Math.sqrt(headDim);
    const steps = [{ tokens: range(5), positions: range(5) }, { tokens: [5, 6], positions: [5, 6] }];
    const outs = await runSteps((g, t) => g.attention('a',
      g.getRows('q', table(g, q, nHeads * headDim), t), g.getRows('k', table(g, k, nKv * headDim), t), g.getRows('v', table(g, v, nKv * headDim), t),
      { layer: 0, nHeads, nKvHeads: nKv, headDim, scale }), steps);
    const ref = refAttention(q, k, v, { nTokens: total, nHeads, nKvHeads: nKv, headDim, scale, positions: Int32Array.from(range(total)), kvLength: total });
    const w = nHeads * headDim;
    expect(maxRelError(outs[0]!, ref.subarray(0, 5 * w))).toBeLessThan(OP_TOLERANCES.attention);
    expect(maxRelError(outs[1]!, ref.subarray(5 * w))).toBeLessThan(OP_TOLERANCES.attention);
  });

  it('swiglu, add and bias add', async () => {
    const cols = 40, n = 3;
    const a = gaussians(r, n * cols, 4), b = gaussians(r, n * cols), bias = gaussians(r, 8);
    const [s] = await runSteps((g, t) => g.swiglu('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
    expect(maxRelError(s!, refSwiglu(a, b))).toBeLessThan(OP_TOLERANCES.elementwise);
    const [sum] = await runSteps((g, t) => g.add('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
    expect(sum).toEqual(refAdd(a, b));
    const w = gaussians(r, 8 * cols);
    const [mb] = await runSteps((g, t) => g.mulMat('m', g.constant('w', GgmlType.F32, cols, 8, data(w)), g.getRows('a', table(g, a, cols), t), g.constant('b', GgmlType.F32, 8, 1, data(bias))), [{ tokens: range(n), positions: range(n) }]);
    const ref = new Float32Array(n * 8);
    for (let i = 0; i < n; i++) for (let o = 0; o < 8; o++) {
      let acc = 0;
      for (let c = 0; c < cols; c++) acc += a[i * cols + c]! * w[o * cols + c]!;
      ref[i * 8 + o] = acc + bias[o]!;
    }
    expect(maxRelError(mb!, ref)).toBeLessThan(OP_TOLERANCES.elementwise);
  });

  it('rejects bad graphs and bad steps with errors, not crashes', async () => {
    const g = new GraphBuilder();
    const t = g.tokens();
    const w = new Float32Array(4 * 8);
    const x = g.getRows('x', g.constant('t', GgmlType.F32, 8, 4, data(w)), t);
    const bad = g.mulMat('m', g.constant('w', GgmlType.F32, 6, 2, data(new Float32Array(12))), x);
    await expect(new CpuBackend().compile(g.build(bad), { slots: 1, contextSize: 8, maxBatch: 4, kvCacheType: 'f32', threads: 1 })).rejects.toThrow(/does not match weight width/);
    const good = new GraphBuilder();
    const out = good.getRows('x', good.constant('t', GgmlType.F32, 8, 4, data(w)), good.tokens());
    const c = await new CpuBackend().compile(good.build(out), { slots: 1, contextSize: 8, maxBatch: 4, kvCacheType: 'f32', threads: 1 });
    const y = new Float32Array(8);
    await expect(c.forward(Int32Array.of(4), Int32Array.of(0), 0, true, y)).rejects.toThrow(/outside the vocabulary/);
    await expect(c.forward(Int32Array.of(1), Int32Array.of(8), 0, true, y)).rejects.toThrow(/outside the context/);
    await expect(c.forward(Int32Array.of(1, 2), Int32Array.of(0, 1), 0, true, y)).rejects.toThrow(/output buffer/);
    await expect(c.forward(Int32Array.of(1), Int32Array.of(0), 3, true, y)).rejects.toThrow(/slot 3/);
    await c.forward(Int32Array.of(1), Int32Array.of(0), 0, true, y);
    expect(y).toEqual(w.subarray(8, 16));
    c.dispose();
  });
});
