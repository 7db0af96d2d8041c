// The CUDA device the CUDA tests run on, and a runner for small graphs on it. Where no device is
// usable (no CUDA in the build, no driver, no GPU) the suites skip and their titles say why.
import { CudaBackend, type CudaBackendOptions, cudaDevices, type CudaGraph } from '../../src/backend/cuda/cuda-backend.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';

const list = cudaDevices();

/** Why the CUDA tests skip here, or undefined when a device is usable. */
export const cudaSkipReason: string | undefined = list.devices.length > 0 ? undefined : (list.reason ?? 'no CUDA device');

if (cudaSkipReason) console.log(`CUDA tests skipped: ${cudaSkipReason}`);

/** A suite title that says when and why it is skipped. */
export const cudaTitle = (name: string): string => (cudaSkipReason ? `${name} (skipped: ${cudaSkipReason})` : name);

export const data = (bytes: ArrayBufferView): WeightData => ({ buffer: bytes.buffer as ArrayBuffer, byteOffset: bytes.byteOffset, byteLength: bytes.byteLength });
export const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);

/** An F32 table whose row i is fed as the activation of token id i (through get_rows). */
export function table(g: GraphBuilder, values: Float32Array, cols: number): number {
  return g.constant('table', GgmlType.F32, cols, values.length / cols, data(values));
}

export interface Step {
  tokens: number[];
  positions: number[];
}

export interface RunOptions extends CudaBackendOptions {
  kvCacheType?: 'f32' | 'f16';
  contextSize?: number;
  maxBatch?: number;
  slots?: number;
}

/** Compiles `build` on the CUDA backend and runs it on each step (all outputs), in slot 0. */
export async function runSteps(build: (g: GraphBuilder, tokens: number) => number, steps: Step[], o: RunOptions = {}): Promise<Float32Array[]> {
  const compiled = await compileCuda(build, o);
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

export async function compileCuda(build: (g: GraphBuilder, tokens: number) => number, o: RunOptions = {}): Promise<CudaGraph> {
  const g = new GraphBuilder();
  const graph = g.build(build(g, g.tokens()));
  return new CudaBackend(o).compile(graph, {
    slots: o.slots ?? 1,
    contextSize: o.contextSize ?? 256,
    maxBatch: o.maxBatch ?? 128,
    kvCacheType: o.kvCacheType ?? 'f32',
    threads: 1,
  });
}
