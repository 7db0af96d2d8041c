import { describe, expect, it } from 'vitest';
import { Candidates } from '../../../src/sampling/candidates.js';
import { minP } from '../../../src/sampling/min-p.js';
import { topK } from '../../../src/sampling/top-k.js';

function candidates(logits: number[]): Candidates {
  const c = new Candidates(logits.length);
  c.reset(logits);
  return c;
}

// Probabilities 0.05, 0.5, 0.15, 0.3 (ids 0..3) as logits.
const logits = [0.05, 0.5, 0.15, 0.3].map(Math.log);

describe('minP', () => {
  it('keeps tokens with at least p times the top probability, in their order', () => {
    const c = candidates(logits);
    minP(c, 0.2); // threshold 0.1
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([1, 2, 3]);
    expect(c.sorted).toBe(false);
  });

  it('cuts a sorted set at the threshold', () => {
    const c = candidates(logits);
    topK(c, 4);
    minP(c, 0.5); // threshold 0.25
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([1, 3]);
  });

  it('keeps only the top token at p = 1 (and ties with it)', () => {
    const c = candidates([2, 5, 5, 1]);
    minP(c, 1);
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([1, 2]);
  });

  it('is a no-op at p = 0', () => {
    const c = candidates(logits);
    minP(c, 0);
    expect(c.size).toBe(4);
  });
});
