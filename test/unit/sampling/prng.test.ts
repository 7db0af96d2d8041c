import { describe, expect, it } from 'vitest';
import { Prng } from '../../../src/sampling/prng.js';

// Known answers from the C reference implementations (xoshiro128** 1.1 and splitmix64 by
// Blackman & Vigna), compiled with gcc; not from this code.
describe('Prng', () => {
  it('matches the xoshiro128** reference from state {1, 2, 3, 4}', () => {
    const p = Prng.fromState(1, 2, 3, 4);
    const got = Array.from({ length: 10 }, () => p.nextUint32());
    expect(got).toEqual([
      11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849, 3729100597, 4258142804,
    ]);
  });

  it('matches the reference from a state with high bits set', () => {
    const p = Prng.fromState(0x9e3779b9, 0x243f6a88, 0xb7e15162, 0xdeadbeef);
    const got = Array.from({ length: 6 }, () => p.nextUint32());
    expect(got).toEqual([2463954730, 5524658, 74256371, 1905451993, 3123413897, 314453775]);
  });

  it.each([
    [0, [3737715805, 2584255861, 2876756834, 3286328325, 1553311962]],
    [42, [1776835114, 4165204688, 17111135, 2317295270, 2792088233]],
    [-1, [477689756, 2493998634, 555695776, 607808419, 61340979]],
    [Number.MAX_SAFE_INTEGER, [1233166643, 1287031142, 661813442, 2960669951, 2601079046]],
  ])('seeds through splitmix64 like the reference (seed %d)', (seed, expected) => {
    const p = new Prng(seed);
    expect(Array.from({ length: 5 }, () => p.nextUint32())).toEqual(expected);
  });

  it('gives the same sequence for the same seed and another for another seed', () => {
    const a = new Prng(7), b = new Prng(7), c = new Prng(8);
    const sa = Array.from({ length: 50 }, () => a.nextFloat());
    expect(Array.from({ length: 50 }, () => b.nextFloat())).toEqual(sa);
    expect(Array.from({ length: 50 }, () => c.nextFloat())).not.toEqual(sa);
  });

  it('nextFloat is uniform on [0, 1)', () => {
    const p = new Prng(123);
    const bins = new Array(10).fill(0);
    const n = 100_000;
    let outside = 0;
    for (let i = 0; i < n; i++) {
      const u = p.nextFloat();
      if (!(u >= 0 && u < 1)) outside++;
      bins[Math.floor(u * 10)]++;
    }
    expect(outside).toBe(0);
    for (const b of bins) expect(Math.abs(b - n / 10)).toBeLessThan(600); // > 6 sigma
  });

  it('rejects seeds that are not safe integers and an all-zero state', () => {
    expect(() => new Prng(1.5)).toThrow(RangeError);
    expect(() => new Prng(2 ** 60)).toThrow(RangeError);
    expect(() => Prng.fromState(0, 0, 0, 0)).toThrow(RangeError);
  });
});
