import { describe, expect, it } from 'vitest';
import { swiglu } from '../../../src/reference/swiglu.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);
const close = (values: number[]) => values.map((v) => expect.closeTo(v, 6));

describe('swiglu', () => {
  it('is silu(gate) * up with silu(g) = g / (1 + e^-g)', () => {
    const y = swiglu(f32(0, 1, -1), f32(5, 2, 3));
    expect(Array.from(y)).toEqual(close([0, 2 / (1 + Math.exp(-1)), (3 * -1) / (1 + Math.E)]));
  });

  it('rejects mismatched lengths', () => {
    expect(() => swiglu(f32(1), f32(1, 2))).toThrow(RangeError);
  });
});
