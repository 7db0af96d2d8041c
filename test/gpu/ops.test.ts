// Every WGSL kernel, run as a one-op graph on the WebGPU backend, against the TypeScript reference on
// random inputs: with the adapter's features (shader-f16, subgroups) and with the fallbacks.
// Activations are fed through get_rows of F32 tables as in test/kernels/ops.test.ts, and a second
// step exercises the KV cache (a prefill step, then decode steps). Then the same graphs on the CPU
// backend: the kernels compute its floating-point order, so the outputs must be equal.
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { WebGpuBackend, type WebGpuBackendOptions } from '../../src/backend/webgpu/webgpu-backend.js';
import { GGML_TYPES, GgmlType } from '../../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../../src/model/graph.js';
import { add as refAdd } from '../../src/reference/add.js';
import { attention as refAttention } from '../../src/reference/attention.js';
import { getRows as refGetRows } from '../../src/reference/get-rows.js';
import { matMul } from '../../src/reference/mat-mul.js';
import { dequantize, quantize } from '../../src/reference/quantize.js';
import { rmsNorm as refRmsNorm } from '../../src/reference/rms-norm.js';
import { rope as refRope } from '../../src/reference/rope.js';
import { swiglu as refSwiglu } from '../../src/reference/swiglu.js';
import { greedy } from '../../src/sampling/greedy.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { OP_TOLERANCES, WEBGPU_TOLERANCES } from '../kernels/tolerances.js';
import { activationsAsSeen } from './activations.js';
import { featureConfigs, skipReason, title } from './gpu-adapter.js';

const data = (bytes: ArrayBufferView): WeightData => ({ buffer: bytes.buffer as ArrayBuffer, byteOffset: bytes.byteOffset, byteLength: bytes.byteLength });
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

const WEIGHT_TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];

interface Steps {
  tokens: number[];
  positions: number[];
}

async function runSteps(
  options: WebGpuBackendOptions,
  build: (g: GraphBuilder, tokens: number) => number,
  steps: Steps[],
  kvCacheType: 'f32' | 'f16' = 'f32',
  backend: Backend = new WebGpuBackend(options),
): Promise<Float32Array[]> {
  const g = new GraphBuilder();
  const graph = g.build(build(g, g.tokens()));
  const maxBatch = Math.max(40, ...steps.map((s) => s.tokens.length));
  const contextSize = Math.max(256, ...steps.flatMap((s) => s.positions.map((p) => p + 1)));
  const compiled = await backend.compile(graph, { slots: 1, contextSize, maxBatch, kvCacheType, threads: 1 });
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

function table(g: GraphBuilder, values: Float32Array, cols: number): number {
  return g.constant('table', GgmlType.F32, cols, values.length / cols, data(values));
}

describe.skipIf(skipReason)(title('WebGPU kernels match the TypeScript reference'), () => {
  for (const { name, options } of featureConfigs) {
    describe(name, () => {
      const r = prng(11);

      it('get_rows dequantizes rows of every weight type', async () => {
        for (const type of WEIGHT_TYPES) {
          const cols = 256, rows = 6;
          const q = quantize(type, gaussians(r, rows * cols));
          const ids = [5, 0, 3, 3];
          const [y] = await runSteps(options, (g, t) => g.getRows('x', g.constant('t', type, cols, rows, data(q)), t), [{ tokens: ids, positions: range(4) }]);
          const rowBytes = q.length / rows;
          const ref = refGetRows((row) => dequantize(type, q.subarray(row * rowBytes, (row + 1) * rowBytes), cols), rows, cols, ids);
          expect(maxRelError(y!, ref), GGML_TYPES[type].name).toBeLessThanOrEqual(WEBGPU_TOLERANCES.getRows);
        }
      });

      it('rms_norm over rows and over head groups', async () => {
        for (const [cols, group] of [[96, 96], [128, 32], [640, 640]] as const) {
          const x = gaussians(r, 5 * cols, 3);
          const w = gaussians(r, group);
          const [y] = await runSteps(options, (g, t) => g.rmsNorm('n', g.getRows('x', table(g, x, cols), t), g.constant('w', GgmlType.F32, group, 1, data(w)), 1e-5, group), [{ tokens: range(5), positions: range(5) }]);
          expect(maxRelError(y!, refRmsNorm(x, w, (5 * cols) / group, group, 1e-5))).toBeLessThan(WEBGPU_TOLERANCES.rmsNorm);
        }
      });

      it('rms_norm rounds its scale exactly as the CPU definition (float32 squares summed in float64, float32 mean, sqrt, reciprocal)', async () => {
        const f = Math.fround;
        const cols = 256;
        // Rows that stress the exact sum: a dequantized Q4_0 row (small integers times one scale),
        // mixed magnitudes, tiny values, a single nonzero value, zeros.
        const rows = [
          Float32Array.from(range(cols), (i) => ((i * 7) % 16 - 8) * 0.0123),
          Float32Array.from(range(cols), (i) => (i % 3 === 0 ? 1e4 : 1e-3) * (i % 2 ? -1 : 1) * (1 + i / 97)),
          gaussians(r, cols, 1e-18),
          Float32Array.from(range(cols), (i) => (i === 17 ? 3.5 : 0)),
          new Float32Array(cols),
          gaussians(r, cols, 30),
        ];
        const x = new Float32Array(rows.length * cols);
        rows.forEach((row, i) => x.set(row, i * cols));
        const w = Float32Array.from(range(cols), (i) => (i % 5 === 0 ? 1 : 0.5 + i / cols));
        const eps = 1e-5;
        const [y] = await runSteps(options, (g, t) => g.rmsNorm('n', g.getRows('x', table(g, x, cols), t), g.constant('w', GgmlType.F32, cols, 1, data(w)), eps), [{ tokens: range(rows.length), positions: range(rows.length) }]);
        const expected = new Float32Array(x.length);
        for (let row = 0; row < rows.length; row++) {
          let sum = 0;
          for (let i = 0; i < cols; i++) sum += f(x[row * cols + i]! * x[row * cols + i]!);
          const scale = f(1 / f(Math.sqrt(f(f(sum / cols) + f(eps)))));
          for (let i = 0; i < cols; i++) expected[row * cols + i] = f(f(x[row * cols + i]! * scale) * w[i]!);
        }
        expect(y).toEqual(expected);
      });

      it('rope, normal and neox, with and without frequency factors', async () => {
        const nHeads = 3, headDim = 16, n = 4;
        const x = gaussians(r, n * nHeads * headDim);
        const positions = [0, 7, 100, 3000];
        for (const neox of [false, true]) {
          for (const nRot of [16, 8]) {
            for (const factors of [undefined, Float32Array.from(range(nRot / 2), (i) => 1 + i / 3)]) {
              const g = new GraphBuilder();
              const ff = factors ? g.constant('ff', GgmlType.F32, nRot / 2, 1, data(factors)) : undefined;
              const out = g.rope('r', g.getRows('x', table(g, x, nHeads * headDim), g.tokens()), { nHeads, headDim, nRot, neox, freqBase: 10000, freqScale: 0.5, ...(ff !== undefined ? { freqFactors: ff } : {}) });
              const compiled = await new WebGpuBackend(options).compile(g.build(out), { slots: 1, contextSize: 4096, maxBatch: 4, kvCacheType: 'f32', threads: 1 });
              const y = new Float32Array(n * nHeads * headDim);
              await compiled.forward(Int32Array.from(range(n)), Int32Array.from(positions), 0, true, y);
              compiled.dispose();
              const ref = refRope(x, n, nHeads, headDim, Int32Array.from(positions), { nRot, mode: neox ? 'neox' : 'normal', freqBase: 10000, freqScale: 0.5, ...(factors ? { freqFactors: factors } : {}) });
              expect(maxRelError(y, ref), `neox=${neox} nRot=${nRot}`).toBeLessThan(OP_TOLERANCES.rope);
            }
          }
        }
      });

      for (const kv of ['f32', 'f16'] as const) {
        it(`attention with GQA: a prefill step, then decode steps (${kv} cache)`, async () => {
          const nHeads = 4, nKv = 2, headDim = 8, total = 70;
          const q = gaussians(r, total * nHeads * headDim);
          const k = gaussians(r, total * nKv * headDim);
          const v = gaussians(r, total * nKv * headDim);
          const scale = 1 / Math.sqrt(headDim);
          // 67 rows: the fused kernel crosses a 64-row chunk; then three single-token steps.
          const steps = [{ tokens: range(67), positions: range(67) }, ...[67, 68, 69].map((p) => ({ tokens: [p], positions: [p] }))];
          const g = new GraphBuilder();
          const tk = g.tokens();
          const out = g.attention('a', g.getRows('q', table(g, q, nHeads * headDim), tk), g.getRows('k', table(g, k, nKv * headDim), tk), g.getRows('v', table(g, v, nKv * headDim), tk),
            { layer: 0, nHeads, nKvHeads: nKv, headDim, scale });
          const compiled = await new WebGpuBackend(options).compile(g.build(out), { slots: 1, contextSize: 128, maxBatch: 67, kvCacheType: kv, threads: 1 });
          const outs: Float32Array[] = [];
          for (const s of steps) {
            const y = new Float32Array(s.tokens.length * nHeads * headDim);
            await compiled.forward(Int32Array.from(s.tokens), Int32Array.from(s.positions), 0, true, y);
            outs.push(y);
          }
          compiled.dispose();
          const cached = (x: Float32Array) => (kv === 'f16' ? dequantize(GgmlType.F16, quantize(GgmlType.F16, x), x.length) : x);
          const ref = refAttention(q, cached(k), cached(v), { nTokens: total, nHeads, nKvHeads: nKv, headDim, scale, positions: Int32Array.from(range(total)), kvLength: total });
          const w = nHeads * headDim;
          expect(maxRelError(outs[0]!, ref.subarray(0, 67 * w)), 'prefill').toBeLessThan(WEBGPU_TOLERANCES.attention);
          outs.slice(1).forEach((o, i) => expect(maxRelError(o, ref.subarray((67 + i) * w, (68 + i) * w)), `decode ${i}`).toBeLessThan(WEBGPU_TOLERANCES.attention));
        });
      }

      it('swiglu, add and bias add', async () => {
        const cols = 40, n = 3;
        const a = gaussians(r, n * cols, 4), b = gaussians(r, n * cols), bias = gaussians(r, 8);
        const [s] = await runSteps(options, (g, t) => g.swiglu('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
        expect(maxRelError(s!, refSwiglu(a, b))).toBeLessThan(WEBGPU_TOLERANCES.elementwise);
        const [sum] = await runSteps(options, (g, t) => g.add('s', g.getRows('a', table(g, a, cols), t), g.getRows('b', table(g, b, cols), t)), [{ tokens: range(n), positions: range(n) }]);
        expect(sum).toEqual(refAdd(a, b));
        const w = gaussians(r, 8 * cols);
        const [mb] = await runSteps(options, (g, t) => g.mulMat('m', g.constant('w', GgmlType.F32, cols, 8, data(w)), g.getRows('a', table(g, a, cols), t), g.constant('b', GgmlType.F32, 8, 1, data(bias))), [{ tokens: range(n), positions: range(n) }]);
        expect(maxRelError(mb!, refAdd(matMul(w, 8, cols, a, n), bias))).toBeLessThan(WEBGPU_TOLERANCES.elementwise);
      });

      it('argmax: the largest value, lowest index on ties, never NaN (as greedy)', async () => {
        const width = 1000;
        const rows: Float32Array[] = [
          gaussians(r, width),
          Float32Array.from({ length: width }, (_, i) => (i === 17 || i === 700 || i === 999 ? 5 : i % 7)), // ties
          Float32Array.from({ length: width }, (_, i) => (i % 3 === 0 ? NaN : i === 500 ? 2 : 1)), // NaN never wins
          new Float32Array(width).fill(-Infinity), // nothing comparable: 0
          Float32Array.from({ length: width }, (_, i) => (i === 999 ? Infinity : i)),
        ];
        const values = new Float32Array(rows.length * width);
        rows.forEach((row, i) => values.set(row, i * width));
        const g = new GraphBuilder();
        const out = g.getRows('logits', table(g, values, width), g.tokens());
        const compiled = await new WebGpuBackend(options).compile(g.build(out), { slots: 1, contextSize: 8, maxBatch: 2, kvCacheType: 'f32', threads: 1 });
        try {
          for (let i = 0; i < rows.length; i++) {
            // The last of two tokens' rows: argmax reads the last output row.
            expect(await compiled.forwardArgmax(Int32Array.of(0, i), Int32Array.of(0, 1), 0), `row ${i}`).toBe(greedy(rows[i]!));
          }
        } finally {
          compiled.dispose();
        }
      });

      for (const type of WEIGHT_TYPES) {
        const typeName = GGML_TYPES[type].name;
        it(`mul_mat ${typeName}: matrix-vector and tiled kernels`, async () => {
          // Float types get an odd width so the last 4-value unit is partial; 67 rows so no tile is full.
          const cols = GGML_TYPES[type].blockSize === 1 ? 523 : 512, rows = 67;
          const weights = quantize(type, gaussians(r, rows * cols));
          const wf = dequantize(type, weights, rows * cols);
          for (const nTokens of [1, 3, 8, 33]) {
            const x = gaussians(r, nTokens * cols);
            const [y] = await runSteps(options, (g, t) => g.mulMat('m', g.constant('w', type, cols, rows, data(weights)), g.getRows('x', table(g, x, cols), t)), [{ tokens: range(nTokens), positions: range(nTokens) }]);
            const same = matMul(wf, rows, cols, activationsAsSeen(type, x, cols), nTokens);
            expect(maxRelError(y!, same), `${nTokens} tokens`).toBeLessThanOrEqual(WEBGPU_TOLERANCES.mulMatSameOperands);
          }
        });
      }
    });
  }
});

// The CPU backend's bits: its kernels follow llama.cpp's AVX2 order (eight FMA lanes, Q4_0's one
// chain, ggml's and glibc's expf, the softmax sum in double), and so do the WGSL kernels, with FMAs
// emulated where the device's fma() rounds twice (shaders/include/fma.wgsl).
describe.skipIf(skipReason)(title('WebGPU kernels compute the CPU backend\'s bits'), () => {
  for (const { name, options } of featureConfigs) {
    describe(name, () => {
      const r = prng(12);
      const both = async (build: (g: GraphBuilder, tokens: number) => number, steps: Steps[], kv: 'f32' | 'f16' = 'f32') => {
        const gpu = await runSteps(options, build, steps, kv);
        const cpu = await runSteps(options, build, steps, kv, new CpuBackend());
        return { gpu, cpu };
      };

      for (const type of WEIGHT_TYPES) {
        it(`mul_mat ${GGML_TYPES[type].name}: matrix-vector and tiled kernels`, async () => {
          // Float rows of 523: 65 lanes' steps and a tail of 3 products.
          const cols = GGML_TYPES[type].blockSize === 1 ? 523 : 512, rows = 67;
          const weights = quantize(type, gaussians(r, rows * cols));
          for (const nTokens of [1, 3, 8, 33]) {
            const x = gaussians(r, nTokens * cols);
            const { gpu, cpu } = await both((g, t) => g.mulMat('m', g.constant('w', type, cols, rows, data(weights)), g.getRows('x', table(g, x, cols), t)), [{ tokens: range(nTokens), positions: range(nTokens) }]);
            expect(gpu[0], `${nTokens} tokens`).toEqual(cpu[0]);
          }
        });
      }

      for (const kv of ['f32', 'f16'] as const) {
        it(`attention, ${kv} cache: a prefill step, decode steps, then a prefill step 3300 positions in`, async () => {
          // Head dimensions of 64 (two 32-value steps of the q . k lanes) and 40 (one, and a tail).
          for (const headDim of [64, 40]) {
            const nHeads = 4, nKv = 2, total = 70;
            const q = gaussians(r, total * nHeads * headDim, 0.5);
            const k = gaussians(r, total * nKv * headDim, 0.5);
            const v = gaussians(r, total * nKv * headDim);
            // Then a prefill step past the 3072 positions whose scores the fused kernel keeps in
            // workgroup memory (the cache rows between hold zeros on both backends).
            const steps = [{ tokens: range(67), positions: range(67) }, ...[67, 68, 69].map((p) => ({ tokens: [p], positions: [p] })),
              { tokens: range(4), positions: range(4, 3300) }];
            const { gpu, cpu } = await both((g, t) => g.attention('a', g.getRows('q', table(g, q, nHeads * headDim), t), g.getRows('k', table(g, k, nKv * headDim), t),
              g.getRows('v', table(g, v, nKv * headDim), t), { layer: 0, nHeads, nKvHeads: nKv, headDim, scale: 1 / Math.sqrt(headDim) }), steps, kv);
            gpu.forEach((y, i) => expect(y, `head dim ${headDim}, step ${i}`).toEqual(cpu[i]));
          }
        });
      }

      it('swiglu over gates from -120 to 120 (exp under- and overflowing) and zeros', async () => {
        const cols = 64, n = 6;
        const gate = Float32Array.from(gaussians(r, n * cols, 6), (v, i) => (i % 17 === 0 ? 0 : i % 29 === 0 ? v * 20 : v));
        const up = gaussians(r, n * cols);
        const { gpu, cpu } = await both((g, t) => g.swiglu('s', g.getRows('a', table(g, gate, cols), t), g.getRows('b', table(g, up, cols), t)), [{ tokens: range(n), positions: range(n) }]);
        expect(gpu[0]).toEqual(cpu[0]);
      });

      it('rope, normal and neox, at positions up to 4000', async () => {
        const nHeads = 3, headDim = 64, n = 8;
        const x = gaussians(r, n * nHeads * headDim);
        const positions = [0, 1, 7, 100, 511, 1000, 3000, 4000];
        for (const neox of [false, true]) {
          const { gpu, cpu } = await both((g, t) => g.rope('r', g.getRows('x', table(g, x, nHeads * headDim), t), { nHeads, headDim, nRot: headDim, neox, freqBase: 10000, freqScale: 1 }),
            [{ tokens: range(n), positions }]);
          expect(gpu[0], `neox=${neox}`).toEqual(cpu[0]);
        }
      });
    });
  }
});
