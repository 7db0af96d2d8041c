import { describe, expect, it } from 'vitest';
import { attention, type AttentionOptions } from '../../../src/reference/attention.js';

const f32 = (...v: number[]): Float32Array => Float32Array.from(v);
const i32 = (...v: number[]): Int32Array => Int32Array.from(v);
const close = (values: number[]) => values.map((v) => expect.closeTo(v, 6));

function options(o: Partial<AttentionOptions>): AttentionOptions {
  return { nTokens: 1, nHeads: 1, nKvHeads: 1, headDim: 2, scale: 1, positions: i32(0), kvLength: 1, ...o };
}

describe('attention', () => {
  it('with one key returns its value, whatever the query', () => {
    const out = attention(f32(3, -7), f32(0.5, 2), f32(4, 5), options({}));
    expect(Array.from(out)).toEqual([4, 5]);
  });

  it('weights values by softmax(scale * q.k): scores 0 and ln 3 give 1/4 and 3/4', () => {
    const k = f32(0, 0, Math.log(3), 0);
    const v = f32(1, 0, 0, 1);
    const out = attention(f32(1, 0), k, v, options({ positions: i32(1), kvLength: 2 }));
    expect(Array.from(out)).toEqual(close([0.25, 0.75]));
    // q = (2, 0) with scale 1/2 gives the same scores
    const scaled = attention(f32(2, 0), k, v, options({ positions: i32(1), kvLength: 2, scale: 0.5 }));
    expect(Array.from(scaled)).toEqual(close([0.25, 0.75]));
  });

  it('is causal: the query at position p ignores cache rows after p', () => {
    const k = f32(0, 0, 100, 0);
    const v = f32(1, 1, 9, 9);
    const out = attention(f32(1, 0, 1, 0), k, v, options({ nTokens: 2, positions: i32(0, 1), kvLength: 2 }));
    expect(Array.from(out.subarray(0, 2))).toEqual([1, 1]); // sees row 0 only
    expect(Array.from(out.subarray(2, 4))).toEqual(close([9, 9])); // row 1 dominates
  });

  it('maps query head h to KV head h / (nHeads / nKvHeads)', () => {
    // 4 query heads, 2 KV heads, headDim 1, one cache row: v holds 10 for KV head 0, 20 for 1.
    const out = attention(f32(1, 1, 1, 1), f32(1, 1), f32(10, 20), options({ nHeads: 4, nKvHeads: 2, headDim: 1 }));
    expect(Array.from(out)).toEqual([10, 10, 20, 20]);
  });

  it('averages equal scores over the whole history', () => {
    const out = attention(f32(0), f32(1, 2, 3), f32(3, 6, 9), options({ headDim: 1, positions: i32(2), kvLength: 3 }));
    expect(out[0]).toBeCloseTo(6, 6);
  });

  it('rejects bad shapes and positions outside the cache', () => {
    expect(() => attention(f32(1, 1), f32(1, 1), f32(1, 1), options({ positions: i32(1) }))).toThrow(RangeError);
    expect(() => attention(f32(1, 1), f32(1), f32(1, 1), options({}))).toThrow(RangeError);
    expect(() => attention(f32(1, 1, 1), f32(1), f32(1), options({ nHeads: 3, nKvHeads: 2, headDim: 1 }))).toThrow(RangeError);
  });
});
