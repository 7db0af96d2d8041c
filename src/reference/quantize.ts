// Plain TypeScript dequantizers and reference quantizers for every type kiln computes with, and
// the Q8_0 activation quantizer: the ground truth the native kernels are tested against. The
// quantizers reproduce native/cpu/quants-*.cpp byte for byte, so every single-precision operation
// there is one Math.fround here. Block layouts are ggml's (native/common/quant-blocks.h).
// One file on purpose, past 400 lines: the types share helpers, and reading one layout next to
// the others is how a mistake in one shows.
import { GGML_TYPES, GgmlType } from '../gguf/ggml-type.js';

const f = Math.fround;

const QK_K = 256;
// Below this largest magnitude a Q6_K sub-block (or super-block's largest scale) counts as zero.
const ZERO_GROUP = f(1e-15);

const bits = new DataView(new ArrayBuffer(4));

function floatBits(x: number): number {
  bits.setFloat32(0, x, true);
  return bits.getUint32(0, true);
}

export function fp16ToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Round to nearest even, as ggml's GGML_FP32_TO_FP16 (x is taken as a float32). */
export function floatToFp16(x: number): number {
  return fp16FromBits(floatBits(x));
}

function fp16FromBits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
  if (abs >= 0x477ff000) return sign | 0x7c00; // rounds up to infinity
  if (abs < 0x38800000) {
    // subnormal half, or zero
    if (abs < 0x33000000) return sign;
    const e = abs >>> 23;
    const m = (abs & 0x7fffff) | 0x800000;
    const shift = 126 - e;
    let r = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && r & 1)) r++;
    return sign | r;
  }
  let r = (abs - 0x38000000) >>> 13;
  const rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && r & 1)) r++;
  return sign | r;
}

export function bf16ToFloat(h: number): number {
  bits.setUint32(0, (h & 0xffff) << 16, true);
  return bits.getFloat32(0, true);
}

/** Round to nearest even; NaN stays a quiet NaN (ggml_compute_fp32_to_bf16). */
export function floatToBf16(x: number): number {
  return bf16FromBits(floatBits(x));
}

function bf16FromBits(u: number): number {
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16) & 0xffff;
}

/** ggml's nearest_int: ties to even for |x| < 2^22, the same defined bits as native elsewhere. */
function nearestInt(x: number): number {
  bits.setFloat32(0, x + 12582912, true); // 1.5 * 2^23: the float sum's last bit is the units digit
  return (bits.getInt32(0, true) & 0x007fffff) - 0x00400000;
}

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** C's roundf: half away from zero. */
const roundAway = (v: number): number => Math.sign(v) * Math.round(Math.abs(v));

function absMax(x: Float32Array, from: number, n: number): { amax: number; max: number } {
  let amax = 0;
  let max = 0;
  for (let i = from; i < from + n; i++) {
    if (Math.abs(x[i]!) > amax) {
      amax = Math.abs(x[i]!);
      max = x[i]!;
    }
  }
  return { amax, max };
}

// ---- Q8_0 and Q4_0: 32 values, fp16 d at byte 0, then the values.

function quantizeQ8_0(x: Float32Array, out: DataView, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 34;
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]!));
    const d = f(amax / 127);
    const id = d !== 0 ? f(1 / d) : 0;
    out.setUint16(o, floatToFp16(d), true);
    for (let j = 0; j < 32; j++) {
      const v = roundAway(f(x[b * 32 + j]! * id));
      out.setInt8(o + 2 + j, v > -127 ? (v < 127 ? v : 127) : -127);
    }
  }
}

// llama.cpp's x86 activation quantizer (quantize_row_q8_0 with AVX or AVX2): the same scale, but
// values are multiplied by 127 / amax rather than 1 / d and rounded half to even. Native
// fromFloatActivationsQ8_0; the comparisons skip NaN as fmax does.
function quantizeActivationsQ8_0(x: Float32Array, out: DataView, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 34;
    let amax = 0;
    for (let j = 0; j < 32; j++) if (Math.abs(x[b * 32 + j]!) > amax) amax = Math.abs(x[b * 32 + j]!);
    const id = amax !== 0 ? f(127 / amax) : 0;
    out.setUint16(o, floatToFp16(f(amax / 127)), true);
    for (let j = 0; j < 32; j++) {
      const v = f(x[b * 32 + j]! * id);
      out.setInt8(o + 2 + j, v > -127 ? (v < 127 ? nearestInt(v) : 127) : -127);
    }
  }
}

function dequantizeQ8_0(src: DataView, y: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const d = fp16ToFloat(src.getUint16(b * 34, true));
    for (let j = 0; j < 32; j++) y[b * 32 + j] = f(src.getInt8(b * 34 + 2 + j) * d);
  }
}

// Byte j holds value j (low nibble) and value j + 16 (high nibble), each offset by 8.
function quantizeQ4_0(x: Float32Array, out: DataView, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 18;
    const { max } = absMax(x, b * 32, 32);
    const d = f(max / -8);
    const id = d !== 0 ? f(1 / d) : 0;
    out.setUint16(o, floatToFp16(d), true);
    const level = (v: number): number => {
      const u = f(f(v * id) + 8.5);
      return u < 15 ? (u > 0 ? Math.trunc(u) : 0) : 15;
    };
    for (let j = 0; j < 16; j++) out.setUint8(o + 2 + j, level(x[b * 32 + j]!) | (level(x[b * 32 + 16 + j]!) << 4));
  }
}

function dequantizeQ4_0(src: DataView, y: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const d = fp16ToFloat(src.getUint16(b * 18, true));
    for (let j = 0; j < 16; j++) {
      const byte = src.getUint8(b * 18 + 2 + j);
      y[b * 32 + j] = f(((byte & 0x0f) - 8) * d);
      y[b * 32 + 16 + j] = f(((byte >> 4) - 8) * d);
    }
  }
}

// ---- Q4_K and Q5_K: fp16 d, fp16 dmin, 12 bytes of 6-bit scales and mins, [Q5_K: 32 bytes qh],
// 128 bytes of nibbles. Value 64g + l (l < 32) is the low nibble of qs[32g + l], 64g + 32 + l its
// high nibble; Q5_K keeps their fifth bits in bits 2g and 2g + 1 of qh[l].

interface ScaleMinK {
  bits: 4 | 5;
  blockBytes: number;
  qsOffset: number;
  // The scale search grid of ggml's quantize_row_q4_K_ref / q5_K_ref.
  rmin: number;
  rdelta: number;
  steps: number;
}

const Q4_K: ScaleMinK = { bits: 4, blockBytes: 144, qsOffset: 16, rmin: -1, rdelta: f(0.1), steps: 20 };
const Q5_K: ScaleMinK = { bits: 5, blockBytes: 176, qsOffset: 48, rmin: -0.5, rdelta: f(0.1), steps: 15 };

/** Sub-block j's 6-bit scale and min: j < 4 in the low bits of bytes j and j + 4; above, the low
 *  4 bits in byte j + 4 and the top 2 bits in the spare top bits of bytes j - 4 and j. */
function scaleMinK4(s: DataView, o: number, j: number): [number, number] {
  const q = (i: number): number => s.getUint8(o + 4 + i);
  if (j < 4) return [q(j) & 63, q(j + 4) & 63];
  return [(q(j + 4) & 0x0f) | ((q(j - 4) >> 6) << 4), (q(j + 4) >> 4) | ((q(j) >> 6) << 4)];
}

function levelK(k: ScaleMinK, src: DataView, o: number, i: number): number {
  const g = i >> 6;
  const l = i & 63;
  const byte = src.getUint8(o + k.qsOffset + 32 * g + (l & 31));
  const low = l < 32 ? byte & 0x0f : byte >> 4;
  if (k.bits === 4) return low;
  return low | (((src.getUint8(o + 16 + (l & 31)) >> (2 * g + (l < 32 ? 0 : 1))) & 1) << 4);
}

function dequantizeScaleMinK(k: ScaleMinK, src: DataView, y: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * k.blockBytes;
    const d = fp16ToFloat(src.getUint16(o, true));
    const dmin = fp16ToFloat(src.getUint16(o + 2, true));
    for (let j = 0; j < 8; j++) {
      const [sc, m] = scaleMinK4(src, o, j);
      const dj = f(d * sc);
      const mj = f(dmin * m);
      for (let l = 0; l < 32; l++) y[b * QK_K + 32 * j + l] = f(f(dj * levelK(k, src, o, 32 * j + l)) - mj);
    }
  }
}

/** x ~ scale * l - offset, l in [0, nmax], weighted least squares over a grid of inverse scales
 *  (ggml's make_qkx2_quants); see fitScaleOffset in quants-q4-k-q5-k.cpp. */
function fitScaleOffset(x: Float32Array, w: Float32Array, nmax: number, k: ScaleMinK): { scale: number; offset: number } {
  const n = 32;
  let min = x[0]!;
  let max = x[0]!;
  let sumW = w[0]!;
  let sumX = f(w[0]! * x[0]!);
  for (let i = 1; i < n; i++) {
    if (x[i]! < min) min = x[i]!;
    if (x[i]! > max) max = x[i]!;
    sumW = f(sumW + w[i]!);
    sumX = f(sumX + f(w[i]! * x[i]!));
  }
  if (min > 0) min = 0;
  if (max === min) return { scale: 0, offset: -min };
  let iscale = f(nmax / f(max - min));
  let scale = f(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const l = clamp(nearestInt(f(iscale * f(x[i]! - min))), 0, nmax);
    const diff = f(f(f(scale * l) + min) - x[i]!);
    bestError = f(bestError + f(w[i]! * f(diff * diff)));
  }
  const L = new Uint8Array(n);
  for (let step = 0; step <= k.steps; step++) {
    // min is the best fit so far, as in ggml: later steps search around it.
    iscale = f(f(f(k.rmin + f(k.rdelta * step)) + nmax) / f(max - min));
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const l = clamp(nearestInt(f(iscale * f(x[i]! - min))), 0, nmax);
      L[i] = l;
      const wl = f(w[i]! * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXL = f(sumXL + f(wl * x[i]!));
    }
    const det = f(f(sumW * sumL2) - f(sumL * sumL));
    if (!(det > 0)) continue;
    let thisScale = f(f(f(sumW * sumXL) - f(sumX * sumL)) / det);
    let thisMin = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / det);
    if (thisMin > 0) {
      thisMin = 0;
      thisScale = f(sumXL / sumL2);
    }
    let error = 0;
    for (let i = 0; i < n; i++) {
      const diff = f(f(f(thisScale * L[i]!) + thisMin) - x[i]!);
      error = f(error + f(w[i]! * f(diff * diff)));
    }
    if (error < bestError) {
      bestError = error;
      scale = thisScale;
      min = thisMin;
    }
  }
  return { scale, offset: -min };
}

function quantizeScaleMinK(k: ScaleMinK, x: Float32Array, out: DataView, nb: number): void {
  const nmax = (1 << k.bits) - 1;
  const w = new Float32Array(32);
  for (let b = 0; b < nb; b++) {
    const o = b * k.blockBytes;
    const scales: number[] = [];
    const mins: number[] = [];
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      const xs = x.subarray(b * QK_K + 32 * j, b * QK_K + 32 * j + 32);
      let sumX2 = 0;
      for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(xs[l]! * xs[l]!));
      const avX = f(Math.sqrt(f(sumX2 / 32)));
      for (let l = 0; l < 32; l++) w[l] = f(avX + Math.abs(xs[l]!));
      const { scale, offset } = fitScaleOffset(xs, w, nmax, k);
      scales.push(scale);
      mins.push(offset);
      if (scale > maxScale) maxScale = scale;
      if (offset > maxMin) maxMin = offset;
    }
    const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
    const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
    const ls = scales.map((s) => clamp(nearestInt(f(invScale * s)), 0, 63));
    const lm = mins.map((m) => clamp(nearestInt(f(invMin * m)), 0, 63));
    for (let j = 0; j < 4; j++) {
      out.setUint8(o + 4 + j, ls[j]! | ((ls[j + 4]! >> 4) << 6));
      out.setUint8(o + 8 + j, lm[j]! | ((lm[j + 4]! >> 4) << 6));
      out.setUint8(o + 12 + j, (ls[j + 4]! & 0x0f) | ((lm[j + 4]! & 0x0f) << 4));
    }
    const dBits = floatToFp16(f(maxScale / 63));
    const dminBits = floatToFp16(f(maxMin / 63));
    out.setUint16(o, dBits, true);
    out.setUint16(o + 2, dminBits, true);
    const d = fp16ToFloat(dBits);
    const dmin = fp16ToFloat(dminBits);
    const L = new Uint8Array(QK_K);
    for (let j = 0; j < 8; j++) {
      const dj = f(d * ls[j]!);
      const mj = f(dmin * lm[j]!);
      for (let l = 0; l < 32; l++) {
        L[32 * j + l] = dj !== 0 ? clamp(nearestInt(f(f(x[b * QK_K + 32 * j + l]! + mj) / dj)), 0, nmax) : 0;
      }
    }
    if (k.bits === 5) for (let l = 0; l < 32; l++) out.setUint8(o + 16 + l, 0);
    for (let g = 0; g < 4; g++) {
      for (let l = 0; l < 32; l++) {
        const lo = L[64 * g + l]!;
        const hi = L[64 * g + 32 + l]!;
        out.setUint8(o + k.qsOffset + 32 * g + l, (lo & 0x0f) | ((hi & 0x0f) << 4));
        if (k.bits === 5) {
          const qh = out.getUint8(o + 16 + l) | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1));
          out.setUint8(o + 16 + l, qh);
        }
      }
    }
  }
}

// ---- Q6_K: 128 bytes ql, 64 bytes qh, 16 int8 scales, fp16 d at byte 208. In each half of 128,
// value l (l < 32) and l + 64 share ql[l], l + 32 and l + 96 share ql[l + 32] (low, high
// nibble), and the four keep their top 2 bits in bits 0, 2, 4, 6 of qh[l].

function levelQ6_K(src: DataView, o: number, i: number): number {
  const h = i >> 7;
  const l = i & 127;
  const quarter = l >> 5;
  const byte = src.getUint8(o + 64 * h + (l & 31) + (quarter & 1 ? 32 : 0));
  const low = quarter < 2 ? byte & 0x0f : byte >> 4;
  const high = (src.getUint8(o + 128 + 32 * h + (l & 31)) >> (2 * quarter)) & 3;
  return (low | (high << 4)) - 32;
}

function dequantizeQ6_K(src: DataView, y: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 210;
    const d = fp16ToFloat(src.getUint16(o + 208, true));
    for (let i = 0; i < QK_K; i++) y[b * QK_K + i] = f(f(d * src.getInt8(o + 192 + (i >> 4))) * levelQ6_K(src, o, i));
  }
}

/** x ~ scale * l, l in [-32, 31], weighted by x^2 (ggml's make_qx_quants); see quants-q6-k.cpp. */
function fitScaleQ6_K(x: Float32Array, from: number): number {
  const n = 16;
  const nmax = 32;
  const { amax, max } = absMax(x, from, n);
  if (amax < ZERO_GROUP) return 0;
  let sumLX = 0;
  let sumL2 = 0;
  const accumulate = (iscale: number): void => {
    sumLX = 0;
    sumL2 = 0;
    for (let i = from; i < from + n; i++) {
      const l = clamp(nearestInt(f(iscale * x[i]!)), -nmax, nmax - 1);
      const w = f(x[i]! * x[i]!);
      sumLX = f(sumLX + f(f(w * x[i]!) * l));
      sumL2 = f(sumL2 + f(f(w * l) * l));
    }
  };
  accumulate(f(-nmax / max));
  let scale = sumL2 !== 0 ? f(sumLX / sumL2) : 0;
  let best = f(scale * sumLX);
  for (let step = -9; step <= 9; step++) {
    if (step === 0) continue;
    accumulate(f(-f(nmax + f(f(0.1) * step)) / max));
    if (sumL2 > 0 && f(sumLX * sumLX) > f(best * sumL2)) {
      scale = f(sumLX / sumL2);
      best = f(scale * sumLX);
    }
  }
  return scale;
}

function quantizeQ6_K(x: Float32Array, out: DataView, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 210;
    const scales: number[] = [];
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let j = 0; j < 16; j++) {
      const s = fitScaleQ6_K(x, b * QK_K + 16 * j);
      scales.push(s);
      if (Math.abs(s) > maxAbsScale) {
        maxAbsScale = Math.abs(s);
        maxScale = s;
      }
    }
    for (let i = 0; i < 210; i++) out.setUint8(o + i, 0);
    if (maxAbsScale < ZERO_GROUP) continue;
    const iscale = f(-128 / maxScale);
    const dBits = floatToFp16(f(1 / iscale));
    out.setUint16(o + 208, dBits, true);
    const sc = scales.map((s) => clamp(nearestInt(f(iscale * s)), -128, 127));
    sc.forEach((s, j) => out.setInt8(o + 192 + j, s));
    const d = fp16ToFloat(dBits);
    for (let i = 0; i < QK_K; i++) {
      const dj = f(d * sc[i >> 4]!);
      const q = dj !== 0 ? clamp(nearestInt(f(x[b * QK_K + i]! / dj)), -32, 31) + 32 : 32;
      const h = i >> 7;
      const l = i & 127;
      const quarter = l >> 5;
      const lowAt = o + 64 * h + (l & 31) + (quarter & 1 ? 32 : 0);
      out.setUint8(lowAt, out.getUint8(lowAt) | ((q & 0x0f) << (quarter < 2 ? 0 : 4)));
      const highAt = o + 128 + 32 * h + (l & 31);
      out.setUint8(highAt, out.getUint8(highAt) | ((q >> 4) << (2 * quarter)));
    }
  }
}

// ---- Q8_K: float d, 256 int8 values, 16 int16 sums of 16 values.

function quantizeQ8_K(x: Float32Array, out: DataView, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const o = b * 292;
    for (let i = 0; i < 292; i++) out.setUint8(o + i, 0);
    const { amax, max } = absMax(x, b * QK_K, QK_K);
    if (amax === 0) continue;
    const iscale = f(-127 / max);
    for (let j = 0; j < 16; j++) {
      let sum = 0;
      for (let i = 16 * j; i < 16 * j + 16; i++) {
        const q = clamp(nearestInt(f(iscale * x[b * QK_K + i]!)), -127, 127);
        out.setInt8(o + 4 + i, q);
        sum += q;
      }
      out.setInt16(o + 260 + 2 * j, sum, true);
    }
    out.setFloat32(o, f(1 / iscale), true);
  }
}

function dequantizeQ8_K(src: DataView, y: Float32Array, nb: number): void {
  for (let b = 0; b < nb; b++) {
    const d = src.getFloat32(b * 292, true);
    for (let i = 0; i < QK_K; i++) y[b * QK_K + i] = f(d * src.getInt8(b * 292 + 4 + i));
  }
}

// ---- The dispatch.

const storedBits = (x: Float32Array, n: number): Uint32Array => new Uint32Array(x.buffer, x.byteOffset, n);

type Quantizer = (x: Float32Array, out: DataView, blocks: number) => void;
type Dequantizer = (src: DataView, y: Float32Array, blocks: number) => void;

// The float types convert the stored bits, so a NaN keeps its payload as it does natively.
const FORMATS: Partial<Record<GgmlType, { quantize: Quantizer; dequantize: Dequantizer }>> = {
  [GgmlType.F32]: {
    quantize: (x, out, n) => storedBits(x, n).forEach((u, i) => out.setUint32(4 * i, u, true)),
    dequantize: (src, y) => y.forEach((_, i) => (y[i] = src.getFloat32(4 * i, true))),
  },
  [GgmlType.F16]: {
    quantize: (x, out, n) => storedBits(x, n).forEach((u, i) => out.setUint16(2 * i, fp16FromBits(u), true)),
    dequantize: (src, y) => y.forEach((_, i) => (y[i] = fp16ToFloat(src.getUint16(2 * i, true)))),
  },
  [GgmlType.BF16]: {
    quantize: (x, out, n) => storedBits(x, n).forEach((u, i) => out.setUint16(2 * i, bf16FromBits(u), true)),
    dequantize: (src, y) => y.forEach((_, i) => (y[i] = bf16ToFloat(src.getUint16(2 * i, true)))),
  },
  [GgmlType.Q8_0]: { quantize: quantizeQ8_0, dequantize: dequantizeQ8_0 },
  [GgmlType.Q4_0]: { quantize: quantizeQ4_0, dequantize: dequantizeQ4_0 },
  [GgmlType.Q4_K]: {
    quantize: (x, out, nb) => quantizeScaleMinK(Q4_K, x, out, nb),
    dequantize: (src, y, nb) => dequantizeScaleMinK(Q4_K, src, y, nb),
  },
  [GgmlType.Q5_K]: {
    quantize: (x, out, nb) => quantizeScaleMinK(Q5_K, x, out, nb),
    dequantize: (src, y, nb) => dequantizeScaleMinK(Q5_K, src, y, nb),
  },
  [GgmlType.Q6_K]: { quantize: quantizeQ6_K, dequantize: dequantizeQ6_K },
  [GgmlType.Q8_K]: { quantize: quantizeQ8_K, dequantize: dequantizeQ8_K },
};

function formatOf(type: GgmlType, n: number): { blocks: number; bytes: number; format: { quantize: Quantizer; dequantize: Dequantizer } } {
  const format = FORMATS[type];
  const info = GGML_TYPES[type];
  if (!format || !info) throw new RangeError(`type ${type} has no reference (de)quantizer`);
  if (!Number.isInteger(n) || n < 0 || n % info.blockSize !== 0) {
    throw new RangeError(`${info.name} needs a multiple of ${info.blockSize} values, got ${n}`);
  }
  return { blocks: n / info.blockSize, bytes: (n / info.blockSize) * info.typeSize, format };
}

/** The reference quantizer: src as bytes in the GGML layout of `type`. Block types take finite values only. */
export function quantize(type: GgmlType, src: Float32Array): Uint8Array {
  const { blocks, bytes, format } = formatOf(type, src.length);
  if (GGML_TYPES[type].blockSize > 1) {
    const bad = src.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new RangeError(`src[${bad}] is not finite; ${GGML_TYPES[type].name} blocks hold finite values only`);
  }
  const out = new Uint8Array(bytes);
  format.quantize(src, new DataView(out.buffer), blocks);
  return out;
}

/**
 * Activations as the native mulMat quantizes them for a weight whose vecDotType is `type`: Q8_0
 * with llama.cpp's x86 rounding, any other type with its reference quantizer.
 */
export function quantizeActivations(type: GgmlType, src: Float32Array): Uint8Array {
  if (type !== GgmlType.Q8_0) return quantize(type, src);
  const { blocks, bytes } = formatOf(type, src.length);
  const out = new Uint8Array(bytes);
  quantizeActivationsQ8_0(src, new DataView(out.buffer), blocks);
  return out;
}

/** The first n values stored in `src` in the layout of `type`. */
export function dequantize(type: GgmlType, src: Uint8Array, n: number): Float32Array {
  const { blocks, bytes, format } = formatOf(type, n);
  if (src.byteLength < bytes) throw new RangeError(`${n} ${GGML_TYPES[type].name} values need ${bytes} bytes, got ${src.byteLength}`);
  const y = new Float32Array(n);
  format.dequantize(new DataView(src.buffer, src.byteOffset, bytes), y, blocks);
  return y;
}
