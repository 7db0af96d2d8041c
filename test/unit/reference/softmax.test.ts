import { describe, expect, it } from 'vitest';
import { softmax } from '../../../src/reference/softmax.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);
const close = (values: number[]) => values.map((v) => expect.closeTo(v, 6));

describe('softmax', () => {
  it('normalizes exp per row: 0 and ln 3 give 1/4 and 3/4', () => {
    expect(Array.from(softmax(f32(0, Math.log(3), 5, 5), 2, 2))).toEqual(close([0.25, 0.75, 0.5, 0.5]));
  });

  it('is stable for large values and gives -Infinity zero weight', () => {
    expect(Array.from(softmax(f32(1000, 1000, -Infinity), 1, 3))).toEqual([0.5, 0.5, 0]);
  });

  it('rejects mismatched shapes', () => {
    expect(() => softmax(f32(1, 2, 3), 2, 2)).toThrow(RangeError);
  });
});
