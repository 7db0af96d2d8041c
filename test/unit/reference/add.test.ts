import { describe, expect, it } from 'vitest';
import { add } from '../../../src/reference/add.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);

describe('add', () => {
  it('adds same-shaped arrays (residual)', () => {
    expect(Array.from(add(f32(1, 2, 3), f32(10, 20, 30)))).toEqual([11, 22, 33]);
  });

  it('broadcasts a one-row bias over every row', () => {
    expect(Array.from(add(f32(1, 2, 3, 4), f32(10, 20)))).toEqual([11, 22, 13, 24]);
  });

  it('rejects a b that is neither a nor one row of it', () => {
    expect(() => add(f32(1, 2, 3), f32(1, 2))).toThrow(RangeError);
    expect(() => add(f32(1), f32())).toThrow(RangeError);
  });
});
