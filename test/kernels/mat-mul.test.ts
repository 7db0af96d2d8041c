// The native mulMat against src/reference/mat-mul.ts on dequantized weights, and the best kernels
// for this CPU against the generic definitions.
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../../src/native/binding.js';
import { GGML_TYPES, GgmlType, rowBytes } from '../../src/gguf/ggml-type.js';
import { matMul } from '../../src/reference/mat-mul.js';
import { dequantize, quantize, quantizeActivations } from '../../src/reference/quantize.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { type Prng, prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { TOLERANCES } from './tolerances.js';

const WEIGHT_TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];
// 67 rows: not a multiple of any chunk size. Float types get an odd width so SIMD tails run.
const ROWS = 67;
const colsFor = (type: GgmlType): number => (GGML_TYPES[type].blockSize === 1 ? 523 : 512);
// Their generic dots follow llama.cpp's x86 summation order, which the AVX2 kernels reproduce.
const SAME_BITS_AS_GENERIC = new Set([GgmlType.Q8_0, GgmlType.Q4_0]);

const addon = native();
const vecDotType = new Map(addon.typeTable().map((row) => [row.type, row.vecDotType as GgmlType]));
afterAll(() => addon.setKernelLevel('best'));

interface Problem {
  type: GgmlType;
  cols: number;
  weights: Uint8Array;
  w: Float32Array; // the weights as the kernels see them
  x: Float32Array;
  nTokens: number;
}

function problem(type: GgmlType, nTokens: number, seed: number, cols = colsFor(type)): Problem {
  const r = prng(seed);
  const weights = quantize(type, gaussians(r, ROWS * cols));
  return { type, cols, weights, w: dequantize(type, weights, ROWS * cols), x: gaussians(r, nTokens * cols), nTokens };
}

type Level = 'generic' | 'avx2' | 'best';
// 'avx2' is the SIMD tier without AVX-512: on an AVX-512 CPU, 'best' and 'avx2' are two sets of kernels.
const SIMD_LEVELS: Level[] = ['avx2', 'best'];

function run(p: Problem, level: Level, threads: number): Float32Array {
  addon.setKernelLevel(level);
  const y = new Float32Array(p.nTokens * ROWS);
  addon.mulMat(p.type, p.weights, ROWS, p.cols, p.x, p.nTokens, y, threads);
  return y;
}

// What the kernels multiply: each token's activations after a round trip through the vecDotType.
function activationsAsSeen(p: Problem, quantizer = quantizeActivations): Float32Array {
  const act = vecDotType.get(p.type)!;
  if (act === GgmlType.F32) return p.x;
  const seen = new Float32Array(p.x.length);
  for (let t = 0; t < p.nTokens; t++) {
    const row = p.x.subarray(t * p.cols, (t + 1) * p.cols);
    seen.set(dequantize(act, quantizer(act, row), p.cols), t * p.cols);
  }
  return seen;
}

// Rows shaped like an RMS-normed Q4_0 embedding row with unit norm weights: a scaled copy of 4-bit
// integers, so nearly every Q8_0 block holds a value half a step between two levels (4/8 of its
// largest is 63.5 steps), where multiplying by 127 / amax and by 1 / d round apart.
function q4Shaped(r: Prng, nTokens: number, cols: number): Float32Array {
  const x = dequantize(GgmlType.Q4_0, quantize(GgmlType.Q4_0, gaussians(r, nTokens * cols)), nTokens * cols);
  for (let t = 0; t < nTokens; t++) {
    const row = x.subarray(t * cols, (t + 1) * cols);
    const scale = Math.fround(1 / Math.sqrt(row.reduce((sum, v) => sum + v * v, 0) / cols + 1e-5));
    for (let i = 0; i < cols; i++) row[i] = Math.fround(row[i]! * scale);
  }
  return x;
}

describe('mulMat (generic) against the reference', () => {
  for (const type of WEIGHT_TYPES) {
    const name = GGML_TYPES[type].name;
    for (const nTokens of [1, 3, 8]) {
      it(`${name}, ${nTokens} token(s)`, () => {
        const p = problem(type, nTokens, 100 + nTokens);
        const y = run(p, 'generic', 2);
        const same = matMul(p.w, ROWS, p.cols, activationsAsSeen(p), nTokens);
        expect(maxRelError(y, same)).toBeLessThanOrEqual(TOLERANCES.mulMatSameOperands);
        const floats = matMul(p.w, ROWS, p.cols, p.x, nTokens);
        const act = GGML_TYPES[vecDotType.get(type)!].name;
        expect(maxRelError(y, floats)).toBeLessThanOrEqual(TOLERANCES.mulMatActivations[act]!);
      });
    }
  }
});

describe('mulMat: best kernels against generic', () => {
  for (const type of WEIGHT_TYPES) {
    it(`${GGML_TYPES[type].name}`, () => {
      for (const nTokens of [1, 3, 8, 13]) {
        const p = problem(type, nTokens, 200 + nTokens);
        const generic = run(p, 'generic', 1);
        for (const threads of [1, 2, 3]) {
          expect(run(p, 'generic', threads), 'each output is one dot product, on whichever thread').toEqual(generic);
          for (const level of SIMD_LEVELS) {
            if (SAME_BITS_AS_GENERIC.has(type)) expect(run(p, level, threads), level).toEqual(generic);
            else expect(maxRelError(run(p, level, threads), generic), level).toBeLessThanOrEqual(TOLERANCES.mulMatBestVsGeneric);
          }
        }
      }
    });
  }

  it('Q8_0 and Q4_0 with an odd number of blocks per row', () => {
    // The AVX-512 Q8_0 tile takes two blocks per product; an odd count leaves one for the tail.
    for (const type of [GgmlType.Q8_0, GgmlType.Q4_0]) {
      for (const nTokens of [1, 5]) {
        const p = problem(type, nTokens, 250 + nTokens, 17 * 32);
        const generic = run(p, 'generic', 1);
        for (const level of SIMD_LEVELS) expect(run(p, level, 2), `${GGML_TYPES[type].name} ${level}`).toEqual(generic);
      }
    }
  });

  it('a token gets the same bits in a batch of any size (prefill and decode agree)', () => {
    for (const type of [GgmlType.F16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K]) {
      // 13 tokens are prefill's tiles and the few left over; 2, 3, 5 and 6 a continuous-batching step's
      // one tile (the K-quants' of 1, 2, 3 and 3 token pairs); 70 leaves 2 tokens past the AVX2 Q8_0
      // prefill's 4-token tiles.
      for (const [nTokens, seed] of [[13, 260], [2, 264], [3, 261], [5, 265], [6, 262], [70, 263]] as const) {
        const batch = problem(type, nTokens, seed);
        for (const level of SIMD_LEVELS) {
          const all = run(batch, level, 2);
          for (const t of [0, nTokens >> 1, nTokens - 1]) {
            const one = { ...batch, x: batch.x.subarray(t * batch.cols, (t + 1) * batch.cols), nTokens: 1 };
            expect(run(one, level, 2), `${GGML_TYPES[type].name} ${level} ${nTokens} tokens, token ${t}`).toEqual(all.subarray(t * ROWS, (t + 1) * ROWS));
          }
        }
      }
    }
  });

  it('integer-dot types: the AVX-512 tier gives the AVX2 tier\'s bits', () => {
    // Token counts cover the AVX-512 tiles' 8- and 4-token steps and the 1-3 left to the AVX2 tiles,
    // Q8_0's groups of 1-4 token pairs (an odd count's last pair half empty) for continuous-batching
    // steps of 2-8 tokens and after 8 in prefill; one token is decode (rows in pairs, 67 rows leave
    // one to the AVX2 kernel).
    for (const type of [GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K]) {
      for (const nTokens of [1, 2, 3, 4, 5, 6, 7, 8, 13, 19]) {
        const p = problem(type, nTokens, 270 + nTokens);
        expect(run(p, 'best', 2), `${GGML_TYPES[type].name}, ${nTokens} token(s)`).toEqual(run(p, 'avx2', 2));
      }
    }
  });

  it('K-quant prefill tiles of the AVX2 tier: the generic definitions, and each token as it gets alone', () => {
    // 5 blocks per row and 23 tokens: two tiles of 8 prepared tokens, one of 4, and 3 tokens left to
    // the row tiles; a token alone is decode (one row at a time).
    for (const type of [GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K]) {
      const name = GGML_TYPES[type].name;
      const p = problem(type, 23, 280, 5 * 256);
      const all = run(p, 'avx2', 2);
      expect(maxRelError(all, run(p, 'generic', 1)), name).toBeLessThanOrEqual(TOLERANCES.mulMatBestVsGeneric);
      for (let t = 0; t < p.nTokens; t++) {
        const one = { ...p, x: p.x.subarray(t * p.cols, (t + 1) * p.cols), nTokens: 1 };
        expect(run(one, 'avx2', 1), `${name} token ${t}`).toEqual(all.subarray(t * ROWS, (t + 1) * ROWS));
      }
    }
  });

  it('single rows and more threads than rows', () => {
    for (const type of [GgmlType.Q4_0, GgmlType.Q6_K]) {
      const cols = colsFor(type);
      const r = prng(300);
      const weights = quantize(type, gaussians(r, cols));
      const x = gaussians(r, 2 * cols);
      const y = new Float32Array(2);
      addon.setKernelLevel('best');
      addon.mulMat(type, weights, 1, cols, x, 2, y, 4);
      expect(maxRelError(y, matMul(dequantize(type, weights, cols), 1, cols, x, 2))).toBeLessThanOrEqual(
        TOLERANCES.mulMatActivations[GGML_TYPES[vecDotType.get(type)!].name]!,
      );
    }
  });
});

describe("activations are quantized as llama.cpp's x86 builds do", () => {
  // Levels read back from llama.cpp's haswell CPU library (node-llama-cpp 3.21.1) on this block.
  it('Q8_0: 127 / amax, halves to even', () => {
    const x = new Float32Array(32);
    x.set([127, 24.5, -24.5, 25.5, 0.5, -1.5]);
    const q = new Int8Array(quantizeActivations(GgmlType.Q8_0, x).buffer, 2, 6);
    expect(Array.from(q)).toEqual([127, 24, -24, 26, 0, -2]);
  });

  it('mulMat on Q4_0-shaped activations rounds them the same way', () => {
    for (const type of [GgmlType.Q8_0, GgmlType.Q4_0]) {
      const cols = colsFor(type);
      const nTokens = 8;
      const r = prng(400);
      const weights = quantize(type, gaussians(r, ROWS * cols));
      const p: Problem = { type, cols, weights, w: dequantize(type, weights, ROWS * cols), x: q4Shaped(r, nTokens, cols), nTokens };
      for (const level of ['generic', 'best'] as const) {
        const y = run(p, level, 2);
        expect(maxRelError(y, matMul(p.w, ROWS, cols, activationsAsSeen(p), nTokens))).toBeLessThanOrEqual(TOLERANCES.mulMatSameOperands);
        // The case has teeth: rounded by the reference quantizer, the same activations land outside.
        expect(maxRelError(y, matMul(p.w, ROWS, cols, activationsAsSeen(p, quantize), nTokens))).toBeGreaterThan(TOLERANCES.mulMatSameOperands);
      }
    }
  });
});

describe('mulMat rejects bad arguments', () => {
  const cols = 256;
  const weights = new Uint8Array(rowBytes(GgmlType.Q4_K, cols) * 4);
  const x = new Float32Array(2 * cols);
  const y = new Float32Array(2 * 4);
  const call = (...args: unknown[]) => () => (addon.mulMat as (...a: unknown[]) => void)(...args);

  it('sizes that do not match', () => {
    expect(call(GgmlType.Q4_K, weights.subarray(0, 144 * 3), 4, cols, x, 2, y, 1)).toThrow(/weights has 432 bytes; expected 576/);
    expect(call(GgmlType.Q4_K, weights, 4, cols, x.subarray(1), 2, y, 1)).toThrow(RangeError);
    expect(call(GgmlType.Q4_K, weights, 4, cols, x, 2, new Float32Array(7), 1)).toThrow(/y has 7 values; expected 8/);
    expect(call(GgmlType.Q4_K, weights, 4, 255, x, 2, y, 1)).toThrow(/multiple of 256/);
    expect(call(GgmlType.Q4_K, weights, 8, cols, x, 1, y, 1)).toThrow(RangeError);
  });
  it('counts out of range', () => {
    expect(call(GgmlType.Q4_K, weights, 0, cols, x, 2, y, 1)).toThrow(/rows must be an integer/);
    expect(call(GgmlType.Q4_K, weights, 4, cols, x, 0, y, 1)).toThrow(/nTokens/);
    expect(call(GgmlType.Q4_K, weights, 4, cols, x, 2, y, 0)).toThrow(/threads/);
    expect(call(GgmlType.Q4_K, weights, 4, cols, x, 2, y, 10_000)).toThrow(/threads/);
    expect(call(GgmlType.Q4_K, weights, 4.5, cols, x, 2, y, 1)).toThrow(RangeError);
    expect(call(GgmlType.Q4_K, weights, NaN, cols, x, 2, y, 1)).toThrow(RangeError);
    expect(call(GgmlType.Q4_K, weights, 2 ** 40, cols, x, 2, y, 1)).toThrow(RangeError);
  });
  it('types and arguments of the wrong kind', () => {
    expect(call(GgmlType.Q8_K, new Uint8Array(292), 1, 256, new Float32Array(256), 1, new Float32Array(1), 1)).toThrow(/not a weight type/);
    expect(call(GgmlType.Q4_1, weights, 4, cols, x, 2, y, 1)).toThrow(RangeError);
    expect(call(GgmlType.Q4_K, Array.from(weights), 4, cols, x, 2, y, 1)).toThrow(TypeError);
    expect(call(GgmlType.Q4_K, weights, 4, cols, new Float64Array(2 * cols), 2, y, 1)).toThrow(TypeError);
    expect(call(GgmlType.Q4_K, weights, '4', cols, x, 2, y, 1)).toThrow(TypeError);
    expect(call(GgmlType.Q4_K, weights)).toThrow(TypeError);
  });
});

describe('timeMulMat (the kernel timer of bench kernel-timer)', () => {
  const cols = 256;
  const weights = new Uint8Array(rowBytes(GgmlType.Q4_0, cols) * 16);
  const x = new Float32Array(2 * cols).fill(0.5);
  const call = (...args: unknown[]) => () => (addon.timeMulMat as (...a: unknown[]) => unknown)(...args);

  it('times the product as a plan runs it: packed where the level packs the type', () => {
    addon.setKernelLevel('best');
    const t = addon.timeMulMat(GgmlType.Q4_0, weights, 16, cols, x, 2, 5);
    expect(t.minUs).toBeGreaterThan(0);
    expect(t.medianUs).toBeGreaterThanOrEqual(t.minUs);
    // Q4_0 with rows a multiple of 8 is packed wherever the SIMD kernels run.
    expect(t.packed).toBe(addon.cpuFeatures().avx2);
    expect(addon.timeMulMat(GgmlType.Q4_0, weights.subarray(0, rowBytes(GgmlType.Q4_0, cols) * 3), 3, cols, x, 2, 5).packed).toBe(false);
    // Cycling through copies of the weights (packed, and in the file's layout).
    expect(addon.timeMulMat(GgmlType.Q4_0, weights, 16, cols, x, 2, 5, 3).minUs).toBeGreaterThan(0);
    expect(addon.timeMulMat(GgmlType.Q4_0, weights, 16, cols, x, 2, 5, 3, 2).minUs).toBeGreaterThan(0);
    // Q4_K and Q5_K where the AVX2 kernels run (any row count), not where the AVX-512 ones do; Q6_K never.
    expect(addon.timeMulMat(GgmlType.Q4_K, new Uint8Array(rowBytes(GgmlType.Q4_K, cols) * 3), 3, cols, x, 2, 5, 3).packed).toBe(addon.cpuFeatures().avx2 && !addon.cpuFeatures().avx512Vnni);
    expect(addon.timeMulMat(GgmlType.Q6_K, new Uint8Array(rowBytes(GgmlType.Q6_K, cols) * 4), 4, cols, x, 2, 5, 3).packed).toBe(false);
  });
  it('checks its arguments as mulMat does', () => {
    expect(call(GgmlType.Q4_0, weights.subarray(0, 18), 16, cols, x, 2, 5)).toThrow(/weights has 18 bytes/);
    expect(call(GgmlType.Q4_0, weights, 16, cols, x, 3, 5)).toThrow(/x has 512 values; expected 768/);
    expect(call(GgmlType.Q4_0, weights, 16, cols, x, 2, 0)).toThrow(/calls/);
    expect(call(GgmlType.Q4_0, weights, 16, cols, x, 2, 5, 0)).toThrow(/copies/);
    expect(call(GgmlType.Q4_0, weights, 16, cols, x, 2, 5, 1, 0)).toThrow(/threads/);
    expect(call(GgmlType.Q8_K, weights, 16, cols, x, 2, 5)).toThrow(/not a weight type/);
    expect(call(GgmlType.Q4_0, weights, 16, cols, x)).toThrow(TypeError);
  });
});
