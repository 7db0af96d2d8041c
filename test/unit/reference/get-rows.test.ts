import { describe, expect, it } from 'vitest';
import { getRows } from '../../../src/reference/get-rows.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);

describe('getRows', () => {
  const table = f32(0, 1, 10, 11, 20, 21); // 3 rows of width 2

  it('gathers rows by id, repeats included', () => {
    expect(Array.from(getRows(table, 3, 2, [2, 0, 2]))).toEqual([20, 21, 0, 1, 20, 21]);
  });

  it('takes rows from a dequantizing function', () => {
    expect(Array.from(getRows((r) => [r, -r, r * r], 5, 3, Int32Array.from([4, 1])))).toEqual([4, -4, 16, 1, -1, 1]);
  });

  it('rejects ids outside the table and mis-sized rows', () => {
    expect(() => getRows(table, 3, 2, [3])).toThrow(RangeError);
    expect(() => getRows(table, 3, 2, [-1])).toThrow(RangeError);
    expect(() => getRows(table, 4, 2, [0])).toThrow(RangeError);
    expect(() => getRows(() => [1], 3, 2, [0])).toThrow(RangeError);
  });
});
