// logprobsAt against the obvious definition: logSoftmax of the whole row, and a full sort for the
// alternatives (best first, lower id first on ties).
import { describe, expect, it } from 'vitest';
import { logSoftmax } from '../../../src/sampling/log-softmax.js';
import { logprobsAt } from '../../../src/sampling/token-logprobs.js';
import { prng } from '../../helpers/prng.js';

function reference(logits: Float32Array, id: number, top: number) {
  const lp = logSoftmax(logits);
  const order = Array.from(logits.keys())
    .filter((i) => logits[i]! > -Infinity)
    .sort((a, b) => logits[b]! - logits[a]! || a - b)
    .slice(0, top);
  return { id, logprob: lp[id]!, top: order.map((i) => ({ id: i, logprob: lp[i]! })) };
}

describe('logprobsAt', () => {
  it('matches log-softmax and a full sort on random rows, with ties and banned tokens', () => {
    const r = prng(7);
    for (let trial = 0; trial < 50; trial++) {
      const n = 1 + r.int(300);
      // Few distinct values, so ties are common; some tokens banned.
      const logits = Float32Array.from({ length: n }, () => (r.next() < 0.1 ? -Infinity : r.int(12) - 6 + (r.next() < 0.5 ? 0 : 0.25)));
      const id = r.int(n);
      const top = r.int(21);
      const got = logprobsAt(logits, id, top);
      const want = reference(logits, id, top);
      expect(got.id).toBe(id);
      expect(got.top.map((t) => t.id)).toEqual(want.top.map((t) => t.id));
      if (want.logprob === -Infinity) expect(got.logprob).toBe(-Infinity);
      else expect(got.logprob).toBeCloseTo(want.logprob, 5);
      got.top.forEach((t, k) => expect(t.logprob).toBeCloseTo(want.top[k]!.logprob, 5));
    }
  });

  it('computes nothing beyond the sampled token with top 0, and never NaN for NaN logits', () => {
    expect(logprobsAt(new Float32Array([0, Math.log(3)]), 1, 0)).toEqual({ id: 1, logprob: expect.closeTo(Math.log(0.75), 6), top: [] });
    const r = logprobsAt(new Float32Array([NaN, 1, 1]), 0, 5);
    expect(r.logprob).toBe(-Infinity);
    expect(r.top.map((t) => t.id)).toEqual([1, 2]);
    expect(r.top[0]!.logprob).toBeCloseTo(-Math.LN2, 6);
  });
});
