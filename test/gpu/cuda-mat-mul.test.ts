// The CUDA matrix products against src/reference/mat-mul.ts for every weight type on each path:
// quantized weights meet int8 activation blocks of 32 (a row-streaming kernel up to 8 tokens, int8
// tensor cores beyond); float weights meet F32 activations up to 8 tokens, then fp16 (bf16 for
// BF16 weights) tensor cores, or F32 tiles (F32 weights, widths not a multiple of 32). Each result is held to the reference twice: on the operands as the kernel sees them
// (which checks the kernel), and on the float operands (which bounds what the path's rounding costs).
import { describe, expect, it } from 'vitest';
import { GGML_TYPES, GgmlType } from '../../src/gguf/ggml-type.js';
import { matMul } from '../../src/reference/mat-mul.js';
import { bf16ToFloat, dequantize, floatToBf16, floatToFp16, fp16ToFloat, quantize } from '../../src/reference/quantize.js';
import { maxRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussians } from '../helpers/random-floats.js';
import { CUDA_TOLERANCES } from '../kernels/tolerances.js';
import { cudaSkipReason, cudaTitle, data, range, runSteps, table } from './cuda-device.js';

const WEIGHT_TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K];
const ROWS = 67; // not a multiple of any tile
const TOKEN_COUNTS = [1, 3, 8, 9, 70];
const MAX_DECODE_TOKENS = 8; // native/cuda/mat-vec.h kMaxMatVecTokens

type Path = 'q8' | 'float' | 'half' | 'bf16' | 'tiled';

const isFloatType = (type: GgmlType) => GGML_TYPES[type].blockSize === 1;

function pathOf(type: GgmlType, cols: number, nTokens: number): Path {
  if (!isFloatType(type)) return 'q8';
  if (nTokens <= MAX_DECODE_TOKENS) return 'float';
  if (type === GgmlType.F32 || cols % 32 !== 0) return 'tiled';
  return type === GgmlType.BF16 ? 'bf16' : 'half';
}

const half = (v: number) => fp16ToFloat(floatToFp16(v));
const bfloat = (v: number) => bf16ToFloat(floatToBf16(v));

function roundHalfEven(v: number): number {
  const f = Math.floor(v);
  const diff = v - f;
  return diff > 0.5 || (diff === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

/** Each block of 32 as quantizeQ8Blocks leaves it: q = x * 127 / amax rounded half to even, d = amax / 127 in fp16. */
function q8BlocksAsSeen(x: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  for (let b = 0; b < x.length; b += 32) {
    let amax = 0;
    for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[b + i]!));
    const id = amax !== 0 ? Math.fround(127 / amax) : 0;
    const d = half(Math.fround(amax / 127));
    for (let i = 0; i < 32; i++) {
      const s = Math.fround(x[b + i]! * id);
      out[b + i] = (s > -127 ? (s < 127 ? roundHalfEven(s) : 127) : -127) * d;
    }
  }
  return out;
}

/** The reference on the operands as the kernel of `path` multiplies them. */
function referenceAsSeen(path: Path, w: Float32Array, cols: number, x: Float32Array, nTokens: number): Float32Array {
  if (path === 'float' || path === 'tiled') return matMul(w, ROWS, cols, x, nTokens);
  if (path === 'q8') return matMul(w, ROWS, cols, q8BlocksAsSeen(x), nTokens);
  // F16/BF16 on tensor cores: 16-bit weights, and each activation row divided by its largest magnitude
  // (multiplied by its float inverse) in 16 bits, the product scaled back.
  const round = path === 'bf16' ? bfloat : half;
  const xs = new Float32Array(x.length);
  const scales = new Float32Array(nTokens);
  for (let t = 0; t < nTokens; t++) {
    let amax = 0;
    for (let c = 0; c < cols; c++) amax = Math.max(amax, Math.abs(x[t * cols + c]!));
    scales[t] = amax > 0 ? amax : 1;
    const inv = Math.fround(1 / scales[t]!);
    for (let c = 0; c < cols; c++) xs[t * cols + c] = round(Math.fround(x[t * cols + c]! * inv));
  }
  const y = matMul(w.map(round), ROWS, cols, xs, nTokens);
  for (let t = 0; t < nTokens; t++) for (let o = 0; o < ROWS; o++) y[t * ROWS + o] = y[t * ROWS + o]! * scales[t]!;
  return y;
}

const FLOAT_OPERAND_TOLERANCE: Record<Path, number> = {
  q8: CUDA_TOLERANCES.mulMatQ8,
  float: CUDA_TOLERANCES.mulMatFloat,
  tiled: CUDA_TOLERANCES.mulMatFloat,
  half: CUDA_TOLERANCES.mulMatHalf,
  bf16: CUDA_TOLERANCES.mulMatBf16,
};

describe.skipIf(cudaSkipReason)(cudaTitle('CUDA mul_mat against the reference'), () => {
  for (const type of WEIGHT_TYPES) {
    // Float rows of 523 values reach the element-wise decode loop and the F32 tiles.
    const widths = isFloatType(type) ? [512, 523] : [512];
    it(GGML_TYPES[type].name, async () => {
      const r = prng(500 + type);
      for (const cols of widths) {
        const weights = quantize(type, gaussians(r, ROWS * cols));
        const w = dequantize(type, weights, ROWS * cols);
        for (const nTokens of TOKEN_COUNTS) {
          const x = gaussians(r, nTokens * cols);
          const [y] = await runSteps((g, t) => g.mulMat('m', g.constant('w', type, cols, ROWS, data(weights)), g.getRows('x', table(g, x, cols), t)),
            [{ tokens: range(nTokens), positions: range(nTokens) }]);
          const path = pathOf(type, cols, nTokens);
          const where = `${cols} columns, ${nTokens} token(s), ${path} path`;
          expect(maxRelError(y!, referenceAsSeen(path, w, cols, x, nTokens)), where).toBeLessThanOrEqual(CUDA_TOLERANCES.mulMatSameOperands);
          expect(maxRelError(y!, matMul(w, ROWS, cols, x, nTokens)), where).toBeLessThanOrEqual(FLOAT_OPERAND_TOLERANCE[path]);
        }
      }
    });
  }

  // q, k and v (or gate and up) read the same activations: up to three such products share a
  // launch, each with its own rows, bias and output. Four in a row: a launch of three, then one.
  it('products on the same activations, sharing launches', async () => {
    const r = prng(700);
    const cols = 256;
    for (const type of [GgmlType.Q4_K, GgmlType.F16]) {
      const weights = [0, 1, 2, 3].map(() => quantize(type, gaussians(r, ROWS * cols)));
      const bias = gaussians(r, ROWS);
      for (const nTokens of [1, 5]) {
        const x = gaussians(r, nTokens * cols);
        const [y] = await runSteps((g, t) => {
          const input = g.getRows('x', table(g, x, cols), t);
          const products = weights.map((w, i) => g.mulMat(`m${i}`, g.constant(`w${i}`, type, cols, ROWS, data(w)), input,
            i === 1 ? g.constant('b', GgmlType.F32, ROWS, 1, data(bias)) : undefined));
          return products.reduce((sum, p, i) => g.add(`s${i}`, sum, p));
        }, [{ tokens: range(nTokens), positions: range(nTokens) }]);
        const ref = new Float32Array(nTokens * ROWS);
        for (const w of weights) {
          const part = referenceAsSeen(pathOf(type, cols, nTokens), dequantize(type, w, ROWS * cols), cols, x, nTokens);
          for (let i = 0; i < ref.length; i++) ref[i] = ref[i]! + part[i]!;
        }
        for (let t = 0; t < nTokens; t++) for (let o = 0; o < ROWS; o++) ref[t * ROWS + o] = ref[t * ROWS + o]! + bias[o]!;
        expect(maxRelError(y!, ref), `${GGML_TYPES[type].name}, ${nTokens} token(s)`).toBeLessThanOrEqual(CUDA_TOLERANCES.mulMatSameOperands);
      }
    }
  });

  it('adds the bias on every path', async () => {
    const r = prng(600);
    const cols = 256;
    const bias = gaussians(r, ROWS);
    for (const type of [GgmlType.F32, GgmlType.Q4_0, GgmlType.F16]) {
      const weights = quantize(type, gaussians(r, ROWS * cols));
      const w = dequantize(type, weights, ROWS * cols);
      for (const nTokens of [2, 33]) {
        const x = gaussians(r, nTokens * cols);
        const [y] = await runSteps((g, t) => g.mulMat('m', g.constant('w', type, cols, ROWS, data(weights)), g.getRows('x', table(g, x, cols), t), g.constant('b', GgmlType.F32, ROWS, 1, data(bias))),
          [{ tokens: range(nTokens), positions: range(nTokens) }]);
        const path = pathOf(type, cols, nTokens);
        const ref = referenceAsSeen(path, w, cols, x, nTokens);
        for (let t = 0; t < nTokens; t++) for (let o = 0; o < ROWS; o++) ref[t * ROWS + o] = ref[t * ROWS + o]! + bias[o]!;
        expect(maxRelError(y!, ref), `${GGML_TYPES[type].name}, ${nTokens} token(s)`).toBeLessThanOrEqual(CUDA_TOLERANCES.mulMatSameOperands);
      }
    }
  });
});
