import { describe, expect, it } from 'vitest';
import { Candidates, FLOAT32_MAX } from '../../../src/sampling/candidates.js';
import { temperature } from '../../../src/sampling/temperature.js';

function candidates(logits: number[]): Candidates {
  const c = new Candidates(logits.length);
  c.reset(logits);
  return c;
}

describe('temperature', () => {
  it('divides the logits by t', () => {
    const c = candidates([1, -2, 0.5]);
    temperature(c, 0.5);
    expect(Array.from(c.logits)).toEqual([2, -4, 1]);
  });

  it('turns ln-probabilities into a sharper distribution: p^(1/t) renormalized', () => {
    const c = candidates([Math.log(0.25), Math.log(0.75)]);
    temperature(c, 0.5);
    c.softmax();
    // 0.25^2 / (0.25^2 + 0.75^2) = 0.1
    expect(c.probs[0]).toBeCloseTo(0.1, 6);
    expect(c.probs[1]).toBeCloseTo(0.9, 6);
  });

  it('clamps to finite float32 when a tiny t overflows', () => {
    const c = candidates([3, -3, 0]);
    temperature(c, 1e-39);
    expect(Array.from(c.logits)).toEqual([FLOAT32_MAX, -FLOAT32_MAX, 0]);
  });

  it('rejects t <= 0, which is greedy and handled by the sampler', () => {
    expect(() => temperature(candidates([1]), 0)).toThrow(RangeError);
    expect(() => temperature(candidates([1]), -1)).toThrow(RangeError);
  });
});
