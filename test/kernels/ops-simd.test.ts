// The SIMD op kernels ('best' level) against their scalar definitions ('generic'), as one-op plans
// at model shapes: head sizes 64 and 128, F32 and F16 KV caches, contexts long enough for every
// vector loop and its tail. Both compute in llama.cpp's order, so all but rms_norm must agree bit
// for bit. ops.test.ts checks the scalar path's companion against the reference.
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';
import { native } from '../../src/native/binding.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { OP_TOLERANCES } from './tolerances.js';

const data = (v: Float32Array): WeightData => ({ buffer: v.buffer as ArrayBuffer, byteOffset: v.byteOffset, byteLength: v.byteLength });
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
type Step = { tokens: number[]; positions: number[] };

/** Runs the graph at the generic level and at `simd` over the same steps; returns [generic, simd] outputs per step. */
async function bothLevels(build: (g: GraphBuilder, tokens: number) => number, steps: Step[], kvCacheType: 'f32' | 'f16' = 'f32',
  simd: 'avx2' | 'best' = 'best'): Promise<[Float32Array[], Float32Array[]]> {
  const results: Float32Array[][] = [];
  for (const level of ['generic', simd] as const) {
    native().setKernelLevel(level);
    const g = new GraphBuilder();
    const graph = g.build(build(g, g.tokens()));
    const maxBatch = Math.max(...steps.map((s) => s.tokens.length));
    const compiled = await new CpuBackend().compile(graph, { slots: 1, contextSize: 4096, maxBatch, kvCacheType, threads: 2 });
    try {
      const outs: Float32Array[] = [];
      for (const s of steps) {
        const y = new Float32Array(s.tokens.length * compiled.outputWidth);
        await compiled.forward(Int32Array.from(s.tokens), Int32Array.from(s.positions), 0, true, y);
        outs.push(y);
      }
      results.push(outs);
    } finally {
      compiled.dispose();
    }
  }
  return [results[0]!, results[1]!];
}

function table(g: GraphBuilder, values: Float32Array, cols: number): number {
  return g.constant('table', GgmlType.F32, cols, values.length / cols, data(values));
}

afterAll(() => native().setKernelLevel('best'));

describe('SIMD op kernels match their scalar definitions', () => {
  const r = prng(11);

  it('rms_norm over model-width rows and per-head groups', async () => {
    for (const [cols, group] of [[2051, 2051], [896, 64]] as const) {
      const x = gaussians(r, 3 * cols, 2), w = gaussians(r, group);
      const [[a], [b]] = await bothLevels((g, t) => g.rmsNorm('n', g.getRows('x', table(g, x, cols), t), g.constant('w', GgmlType.F32, group, 1, data(w)), 1e-6, group), [{ tokens: range(3), positions: range(3) }]);
      expect(maxRelError(b!, a!)).toBeLessThan(OP_TOLERANCES.rmsNorm);
    }
  });

  it('rope, normal and neox, partial rotation, frequency factors, far positions, bit for bit', async () => {
    for (const [nHeads, headDim, nRot] of [[4, 64, 64], [2, 128, 128], [3, 80, 40]] as const) {
      const x = gaussians(r, 3 * nHeads * headDim);
      for (const neox of [false, true]) {
        const factors = Float32Array.from(range(nRot / 2), (i) => 1 + i / 7);
        const [[a], [b]] = await bothLevels((g, t) => g.rope('r', g.getRows('x', table(g, x, nHeads * headDim), t),
          { nHeads, headDim, nRot, neox, freqBase: 500000, freqScale: 1, freqFactors: g.constant('ff', GgmlType.F32, nRot / 2, 1, data(factors)) }),
        [{ tokens: range(3), positions: [0, 17, 4000] }]);
        expect(b, `heads ${nHeads}x${headDim} neox=${neox}`).toEqual(a);
      }
    }
  });

  // Head size 36 takes the tails of the K*Q steps of 32 and of the eight-wide KQV; scale 40 spreads
  // the scores past exp's |n| > 126 and > 192 cases.
  it('attention over a long prefill and decode steps, F32 and F16 caches, GQA, bit for bit', async () => {
    // Groups of 4, 8, 7 and 20 query heads per KV head take the grouped kernel with one token's heads
    // as the lanes (20: an 8, an 8 and a 4). In the prefill, groups of 1, 2, 3 and 4 (Qwen3: 16/8 x
    // 128) take it with the heads of 8, 4, 2 and 2 consecutive tokens, whose lengths differ; a
    // decode step's heads where fewer than 4 share a KV head go one at a time.
    for (const [nHeads, nKv, headDim, scale] of [[8, 2, 64, 1 / 8], [4, 4, 128, 1 / Math.sqrt(128)], [6, 3, 24, 1 / Math.sqrt(24)], [4, 2, 36, 40],
      [16, 2, 64, 1 / 8], [14, 2, 44, 1 / Math.sqrt(44)], [20, 1, 72, 1 / Math.sqrt(72)], [12, 3, 128, 1 / Math.sqrt(128)],
      [16, 8, 128, 1 / Math.sqrt(128)], [3, 1, 36, 40]] as const) {
      for (const kv of ['f32', 'f16'] as const) {
        const total = 203;
        const q = gaussians(r, total * nHeads * headDim), k = gaussians(r, total * nKv * headDim), v = gaussians(r, total * nKv * headDim);
        const steps = [{ tokens: range(200), positions: range(200) }, { tokens: [200], positions: [200] }, { tokens: [201, 202], positions: [201, 202] }];
        // 'best' takes the 512-bit kernel where the CPU has AVX-512 (head sizes 64 and 128); 'avx2' the 256-bit one.
        for (const level of ['avx2', 'best'] as const) {
          const [a, b] = await bothLevels((g, t) => g.attention('a',
            g.getRows('q', table(g, q, nHeads * headDim), t), g.getRows('k', table(g, k, nKv * headDim), t), g.getRows('v', table(g, v, nKv * headDim), t),
            { layer: 0, nHeads, nKvHeads: nKv, headDim, scale }), steps, kv, level);
          steps.forEach((_, i) => expect(b[i], `${nHeads}/${nKv}x${headDim} ${kv} ${level} step ${i}`).toEqual(a[i]));
        }
      }
    }
  });

  it('swiglu (exp as the C library computes it, so bit for bit) and add, over lengths with a vector tail', async () => {
    const cols = 4867, n = 2;
    const x = gaussians(r, n * cols, 4), y = gaussians(r, n * cols);
    // Past exp's overflow and underflow, subnormal results, infinities and NaN.
    x.set([-88.5, -87.4, -103.9, -104.1, 88.7, 88.8, 500, -500, Infinity, -Infinity, NaN, 0, -0, 1e-30], 100);
    const steps = [{ tokens: range(n), positions: range(n) }];
    const [[s0], [s1]] = await bothLevels((g, t) => g.swiglu('s', g.getRows('a', table(g, x, cols), t), g.getRows('b', table(g, y, cols), t)), steps);
    expect(s1).toEqual(s0);
    const [[a0], [a1]] = await bothLevels((g, t) => g.add('s', g.getRows('a', table(g, x, cols), t), g.getRows('b', table(g, y, cols), t)), steps);
    expect(a1).toEqual(a0);
  });
});
