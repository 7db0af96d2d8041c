import { describe, expect, it } from 'vitest';
import { Candidates } from '../../../src/sampling/candidates.js';
import { topK } from '../../../src/sampling/top-k.js';
import { prng } from '../../helpers/prng.js';

function candidates(logits: number[] | Float32Array): Candidates {
  const c = new Candidates(logits.length);
  c.reset(logits);
  return c;
}

/** Ids best first by a full sort: higher logit, then lower id. */
function fullSortIds(logits: Float32Array): number[] {
  return Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
}

describe('topK', () => {
  it('keeps the k best, sorted best first', () => {
    const c = candidates([0.5, 3, -1, 2, 2.5]);
    topK(c, 3);
    expect(c.size).toBe(3);
    expect(c.sorted).toBe(true);
    expect(Array.from(c.ids.subarray(0, 3))).toEqual([1, 4, 3]);
    expect(Array.from(c.logits.subarray(0, 3))).toEqual([3, 2.5, 2]);
  });

  it('keeps the lower id when logits tie at the cut', () => {
    const c = candidates([1, 5, 1, 1, 5]);
    topK(c, 3);
    expect(Array.from(c.ids.subarray(0, 3))).toEqual([1, 4, 0]);
  });

  it('is a no-op for k <= 0 and sorts everything for k >= size', () => {
    const c = candidates([1, 2, 3]);
    topK(c, 0);
    expect(c.size).toBe(3);
    expect(c.sorted).toBe(false);
    topK(c, 10);
    expect(c.size).toBe(3);
    expect(Array.from(c.ids.subarray(0, 3))).toEqual([2, 1, 0]);
  });

  it('truncates an already sorted set without reselecting', () => {
    const c = candidates([1, 2, 3, 4]);
    topK(c, 3);
    topK(c, 2);
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([3, 2]);
  });

  it('agrees with a full sort on random logits with many ties', () => {
    const rng = prng(11);
    for (const [n, k] of [[1, 1], [7, 3], [100, 40], [5000, 1], [5000, 64], [5000, 4999], [20_000, 40]]) {
      // Rounded values make ties common, which exercises the id tie-break.
      const logits = Float32Array.from({ length: n }, () => Math.round(rng.next() * 50) / 4);
      const c = candidates(logits);
      topK(c, k);
      expect(Array.from(c.ids.subarray(0, c.size))).toEqual(fullSortIds(logits).slice(0, k));
    }
  });
});
