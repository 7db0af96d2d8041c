import { describe, expect, it } from 'vitest';
import { Candidates, FLOAT32_MAX } from '../../../src/sampling/candidates.js';
import { dist } from '../../../src/sampling/dist.js';
import { Prng } from '../../../src/sampling/prng.js';

describe('Candidates', () => {
  it('softmax matches exp / sum', () => {
    const c = new Candidates(3);
    c.reset([0, Math.log(2), Math.log(5)]);
    c.softmax();
    expect(Array.from(c.probs)).toEqual([0.125, 0.25, 0.625].map((p) => expect.closeTo(p, 6)));
  });

  it('keeps banned tokens at probability 0 and a fully banned row uniform', () => {
    const c = new Candidates(3);
    c.reset([-Infinity, 1, NaN]);
    expect(Array.from(c.logits)).toEqual([-FLOAT32_MAX, 1, -FLOAT32_MAX]);
    c.softmax();
    expect(Array.from(c.probs)).toEqual([0, 1, 0]);
    c.reset([-Infinity, -Infinity]);
    c.softmax();
    expect(Array.from(c.probs.subarray(0, 2))).toEqual([0.5, 0.5]);
  });

  it('throws when given more logits than its capacity', () => {
    expect(() => new Candidates(2).reset([1, 2, 3])).toThrow(RangeError);
  });
});

describe('dist', () => {
  it('draws in proportion to the softmax', () => {
    const c = new Candidates(3);
    const rng = new Prng(99);
    const counts = [0, 0, 0];
    const n = 60_000;
    for (let i = 0; i < n; i++) {
      c.reset([0, Math.log(2), Math.log(5)]);
      counts[dist(c, rng)]++;
    }
    [0.125, 0.25, 0.625].forEach((p, i) => {
      const sigma = Math.sqrt(n * p * (1 - p));
      expect(Math.abs(counts[i] - n * p)).toBeLessThan(5 * sigma);
    });
  });

  it('never draws a banned token', () => {
    const c = new Candidates(4);
    const rng = new Prng(1);
    for (let i = 0; i < 2000; i++) {
      c.reset([0, -Infinity, 0, -Infinity]);
      expect([0, 2]).toContain(dist(c, rng));
    }
  });

  it('returns the only candidate and throws when there is none', () => {
    const c = new Candidates(1);
    c.reset([3]);
    expect(dist(c, new Prng(0))).toBe(0);
    c.size = 0;
    expect(() => dist(c, new Prng(0))).toThrow(RangeError);
  });
});
