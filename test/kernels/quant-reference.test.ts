// The native dequantizers and reference quantizers against src/reference/quantize.ts: bytes and
// values must agree exactly; round trips must stay within each type's bound.
import { afterAll, describe, expect, it } from 'vitest';
import { native } from '../../src/native/binding.js';
import { GGML_TYPES, GgmlType, rowBytes } from '../../src/gguf/ggml-type.js';
import { dequantize, quantize, quantizeActivations } from '../../src/reference/quantize.js';
import { firstDifference, rmsRelError } from '../helpers/error-metrics.js';
import { prng } from '../helpers/prng.js';
import { gaussian, gaussians } from '../helpers/random-floats.js';
import { TOLERANCES } from './tolerances.js';

const TYPES = [GgmlType.F32, GgmlType.F16, GgmlType.BF16, GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q5_K, GgmlType.Q6_K, GgmlType.Q8_K];
const N = 2048; // 8 super-blocks

const addon = native();
afterAll(() => addon.setKernelLevel('best'));

function nativeQuantize(type: GgmlType, x: Float32Array): Uint8Array {
  const out = new Uint8Array(rowBytes(type, x.length));
  addon.quantize(type, x, out);
  return out;
}

function nativeDequantize(type: GgmlType, bytes: Uint8Array, n: number): Float32Array {
  const out = new Float32Array(n);
  addon.dequantize(type, bytes, out);
  return out;
}

// Inputs that stress the scale searches: signs, ranges, zeros, outliers, magnitudes that overflow
// or underflow an fp16 scale.
const CASES: Record<string, (seed: number) => Float32Array> = {
  gaussian: (seed) => gaussians(prng(seed), N),
  uniform: (seed) => {
    const r = prng(seed);
    return Float32Array.from({ length: N }, () => 2 * r.next() - 1);
  },
  'positive only': (seed) => gaussians(prng(seed), N).map(Math.abs),
  'negative only': (seed) => gaussians(prng(seed), N).map((v) => -Math.abs(v) - 0.5),
  zeros: () => new Float32Array(N),
  'constant positive': () => new Float32Array(N).fill(0.75),
  'constant negative': () => new Float32Array(N).fill(-3),
  'sparse outliers': (seed) => {
    const r = prng(seed);
    return Float32Array.from({ length: N }, () => (r.next() < 0.02 ? 100 * gaussian(r) : 0.01 * gaussian(r)));
  },
  'mixed magnitudes': (seed) => {
    const r = prng(seed);
    return Float32Array.from({ length: N }, (_, i) => gaussian(r) * 10 ** ((Math.floor(i / 16) % 13) - 6));
  },
  huge: (seed) => gaussians(prng(seed), N, 1e7),
  enormous: (seed) => gaussians(prng(seed), N, 1e19),
  tiny: (seed) => gaussians(prng(seed), N, 1e-6),
  minute: (seed) => gaussians(prng(seed), N, 1e-30),
};

describe('reference quantizers: native bytes equal the TS reference', () => {
  for (const type of TYPES) {
    for (const [name, make] of Object.entries(CASES)) {
      it(`${GGML_TYPES[type].name}: ${name}`, () => {
        for (const seed of [1, 2]) {
          const x = make(seed);
          const ts = quantize(type, x);
          const nat = nativeQuantize(type, x);
          const at = firstDifference(nat, ts);
          expect(at, `first differing byte ${at}: native ${nat[at]}, TS ${ts[at]}`).toBe(-1);
        }
      });
    }
  }

  it('float types convert special values bit-exactly', () => {
    const specials = new Float32Array([
      0, -0, 1, -1, 65504, 65519.99, 65520, -65520, 1e-8, 2.98e-8, 2.9802322e-8, 2.9802326e-8, 5.96e-8, 6.1e-5,
      Infinity, -Infinity, NaN, 1.4e-45, -3.4e38, 1.00048828125, 1.0009765625, 3.0000001,
    ]);
    for (const type of [GgmlType.F32, GgmlType.F16, GgmlType.BF16]) {
      const at = firstDifference(nativeQuantize(type, specials), quantize(type, specials));
      expect(at, `${GGML_TYPES[type].name} differs at ${at}`).toBe(-1);
    }
  });
});

// What matrix products quantize activations with, at each kernel level: SIMD versions must give
// the definition's bytes, which the TS reference reproduces.
describe('activation quantizers: every kernel level gives the reference bytes', () => {
  const ACTIVATION_TYPES = [GgmlType.Q8_0, GgmlType.Q8_K, GgmlType.F16, GgmlType.BF16];
  const LEVELS = ['generic', 'avx2', 'best'] as const;
  const activations = (type: GgmlType, x: Float32Array): Uint8Array => {
    const out = new Uint8Array(rowBytes(type, x.length));
    addon.quantizeActivations(type, x, out);
    return out;
  };

  for (const type of ACTIVATION_TYPES) {
    it(`${GGML_TYPES[type].name}`, () => {
      for (const [name, make] of Object.entries(CASES)) {
        const x = make(3);
        const ts = quantizeActivations(type, x);
        for (const level of LEVELS) {
          addon.setKernelLevel(level);
          const at = firstDifference(activations(type, x), ts);
          expect(at, `${name}, ${level}: first differing byte ${at}`).toBe(-1);
        }
      }
    });
  }

  it('NaN and infinite activations: SIMD levels give the generic bytes', () => {
    const x = gaussians(prng(9), N);
    x[5] = NaN;
    x[300] = Infinity;
    x[301] = -Infinity;
    x[700] = -NaN;
    x[1024 + 17] = NaN;
    for (const type of [GgmlType.Q8_0, GgmlType.Q8_K]) {
      addon.setKernelLevel('generic');
      const generic = activations(type, x);
      for (const level of ['avx2', 'best'] as const) {
        addon.setKernelLevel(level);
        const at = firstDifference(activations(type, x), generic);
        expect(at, `${GGML_TYPES[type].name}, ${level}: first differing byte ${at}`).toBe(-1);
      }
    }
  });
});

describe('dequantize: native values equal the TS reference', () => {
  for (const type of TYPES) {
    it(`${GGML_TYPES[type].name}: quantized data and random bytes`, () => {
      const quantized = quantize(type, gaussians(prng(7), N));
      const r = prng(8);
      const random = Uint8Array.from({ length: rowBytes(type, N) }, () => r.int(256));
      for (const bytes of [quantized, random]) {
        const nat = nativeDequantize(type, bytes, N);
        const ts = dequantize(type, bytes, N);
        const at = firstDifference(nat, ts);
        expect(at, `value ${at}: native ${nat[at]}, TS ${ts[at]}`).toBe(-1);
      }
    });
  }
});

describe('round trip error', () => {
  for (const type of TYPES) {
    const { name } = GGML_TYPES[type];
    it(`${name} stays within ${TOLERANCES.roundTrip[name]}`, () => {
      for (const seed of [3, 4, 5]) {
        const x = gaussians(prng(seed), N);
        const y = nativeDequantize(type, nativeQuantize(type, x), N);
        expect(rmsRelError(y, x)).toBeLessThanOrEqual(TOLERANCES.roundTrip[name]!);
      }
    });
  }
});

describe('quantize and dequantize reject bad arguments', () => {
  const x = new Float32Array(256);
  it('wrong destination sizes', () => {
    expect(() => addon.quantize(GgmlType.Q4_0, x, new Uint8Array(143))).toThrow(RangeError);
    expect(() => addon.quantize(GgmlType.Q4_K, x, new Uint8Array(145))).toThrow(/dst has 145 bytes; expected 144/);
    expect(() => addon.dequantize(GgmlType.Q6_K, new Uint8Array(209), new Float32Array(256))).toThrow(RangeError);
    expect(() => addon.dequantize(GgmlType.F16, new Uint8Array(10), new Float32Array(4))).toThrow(RangeError);
  });
  it('lengths that are not whole blocks', () => {
    expect(() => addon.quantize(GgmlType.Q8_0, new Float32Array(33), new Uint8Array(34))).toThrow(/multiple of 32/);
    expect(() => addon.dequantize(GgmlType.Q5_K, new Uint8Array(176), new Float32Array(255))).toThrow(/multiple of 256/);
  });
  it('unknown or unsupported types', () => {
    expect(() => addon.quantize(GgmlType.Q4_1, x, new Uint8Array(160))).toThrow(RangeError);
    expect(() => addon.dequantize(99, new Uint8Array(4), new Float32Array(1))).toThrow(/not one kiln computes with/);
    expect(() => addon.quantize(1.5, x, new Uint8Array(512))).toThrow(RangeError);
    expect(() => addon.quantize('q4_0' as unknown as number, x, new Uint8Array(144))).toThrow(TypeError);
  });
  it('wrong array kinds and misaligned buffers', () => {
    expect(() => addon.quantize(GgmlType.F32, new Float64Array(4) as unknown as Float32Array, new Uint8Array(16))).toThrow(TypeError);
    expect(() => addon.dequantize(GgmlType.F32, new Int8Array(16) as unknown as Uint8Array, new Float32Array(4))).toThrow(TypeError);
    expect(() => addon.dequantize(GgmlType.Q8_0, new Uint8Array(35).subarray(1), new Float32Array(32))).toThrow(/multiple of 4 bytes/);
    expect(() => (addon.quantize as (...args: unknown[]) => void)(GgmlType.F32, x)).toThrow(TypeError);
  });
  it('non-finite values in block types', () => {
    const bad = new Float32Array(32);
    bad[5] = NaN;
    expect(() => addon.quantize(GgmlType.Q8_0, bad, new Uint8Array(34))).toThrow(/src\[5\] is not finite/);
    expect(() => quantize(GgmlType.Q8_0, bad)).toThrow(/src\[5\] is not finite/);
    bad[5] = Infinity;
    expect(() => addon.quantize(GgmlType.Q4_K, new Float32Array(256).fill(Infinity), new Uint8Array(144))).toThrow(RangeError);
  });
});
