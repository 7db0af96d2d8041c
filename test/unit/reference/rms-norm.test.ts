import { describe, expect, it } from 'vitest';
import { rmsNorm } from '../../../src/reference/rms-norm.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);
const close = (values: number[]) => values.map((v) => expect.closeTo(v, 6));

describe('rmsNorm', () => {
  it('divides by the root mean square: [3, 4] has rms sqrt(12.5)', () => {
    const r = Math.sqrt(12.5);
    expect(Array.from(rmsNorm(f32(3, 4), f32(1, 1), 1, 2, 0))).toEqual(close([3 / r, 4 / r]));
  });

  it('multiplies by the weight and adds eps under the root', () => {
    // mean(x^2) = 1, eps = 1: scale 1/sqrt(2)
    expect(Array.from(rmsNorm(f32(1, -1), f32(2, 0.5), 1, 2, 1))).toEqual(close([2 / Math.SQRT2, -0.5 / Math.SQRT2]));
  });

  it('normalizes each group of width on its own (Q/K norm passes tokens x heads groups)', () => {
    const y = rmsNorm(f32(2, 2, 0, 0, -5, 5), f32(1, 3), 3, 2, 0);
    expect(Array.from(y.subarray(0, 2))).toEqual(close([1, 3]));
    expect(Array.from(y.subarray(4, 6))).toEqual(close([-1, 3]));
  });

  it('maps a zero row to zeros when eps > 0', () => {
    expect(Array.from(rmsNorm(f32(0, 0), f32(1, 1), 1, 2, 1e-6))).toEqual([0, 0]);
  });

  it('rejects mismatched shapes', () => {
    expect(() => rmsNorm(f32(1, 2, 3), f32(1, 1), 2, 2, 0)).toThrow(RangeError);
    expect(() => rmsNorm(f32(1, 2), f32(1), 1, 2, 0)).toThrow(RangeError);
  });
});
