import { describe, expect, it } from 'vitest';
import { greedy, greedyLoop } from '../../../src/sampling/greedy.js';

describe('greedy', () => {
  it('returns the index of the largest logit', () => {
    expect(greedy(new Float32Array([0.1, -2, 3.5, 3.4]))).toBe(2);
    expect(greedy([-5, -1, -3])).toBe(1);
  });

  it('breaks ties toward the lowest index', () => {
    expect(greedy(new Float32Array([1, 7, 2, 7, 7]))).toBe(1);
    expect(greedy(new Float32Array([-Infinity, -Infinity]))).toBe(0);
  });

  it('never picks NaN', () => {
    expect(greedy(new Float32Array([NaN, -100, NaN]))).toBe(1);
    expect(greedy(new Float32Array([NaN, NaN]))).toBe(0);
  });

  it('keeps the largest value when a NaN follows it at any stride', () => {
    // A vector max that let a NaN replace the running maximum would forget the 5 below.
    for (const stride of [1, 4, 8, 16, 32, 64]) {
      for (let at = 0; at < 64; at++) {
        const row = new Float32Array(256).fill(1);
        row[at] = 5;
        for (let k = at + stride; k < 256; k += stride) row[k] = NaN;
        expect(greedy(row), `stride ${stride}, at ${at}`).toBe(at);
      }
    }
  });

  it('throws on an empty row', () => {
    expect(() => greedy(new Float32Array(0))).toThrow(RangeError);
  });

  it('picks what the one-pass definition picks on long rows (the addon argmax)', () => {
    let seed = 7;
    const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (const n of [1, 3, 15, 16, 17, 31, 33, 1000, 32000, 151936]) {
      for (let trial = 0; trial < 6; trial++) {
        // Few distinct values, so ties are common (all distinct in trial 5); NaN, -0/+0 and
        // -Infinity mixed in; the largest value sometimes only in the tail past the last whole vector.
        const row = new Float32Array(n);
        for (let i = 0; i < n; i++) {
          const r = next();
          row[i] = r < 0.05 ? NaN : r < 0.1 ? -Infinity : r < 0.15 ? -0 : r < 0.2 ? 0 : trial === 5 ? next() * 2 - 1 : Math.floor(next() * 8) - 4;
        }
        if (trial === 1) row[n - 1] = 100;
        if (trial === 2) row.fill(NaN);
        if (trial === 3) row.fill(-Infinity);
        if (trial === 4) for (let i = 0; i < n; i++) row[i] = i % 3 === 0 ? -0 : i % 3 === 1 ? 0 : -1;
        expect(greedy(row), `n ${n} trial ${trial}`).toBe(greedyLoop(row));
      }
    }
  });
});
