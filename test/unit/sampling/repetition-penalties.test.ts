import { describe, expect, it } from 'vitest';
import { type PenaltyOptions, repetitionPenalties } from '../../../src/sampling/repetition-penalties.js';

const off: PenaltyOptions = { repeatPenalty: 1, repeatLastN: 64, presencePenalty: 0, frequencyPenalty: 0 };

function apply(logits: number[], history: number[], options: Partial<PenaltyOptions>): number[] {
  const row = new Float32Array(logits);
  repetitionPenalties(row, history, { ...off, ...options });
  return Array.from(row);
}

describe('repetitionPenalties', () => {
  it('divides a positive logit and multiplies a negative one by the repeat penalty', () => {
    expect(apply([4, -4, 4, -4], [0, 1], { repeatPenalty: 2 })).toEqual([2, -8, 4, -4]);
  });

  it('applies the repeat penalty once however often the token repeats', () => {
    expect(apply([4, 1], [0, 0, 0], { repeatPenalty: 2 })).toEqual([2, 1]);
  });

  it('subtracts count x frequency plus presence', () => {
    // token 0 seen 3 times: 1 - 3*0.5 - 0.25; token 2 seen once: 1 - 0.5 - 0.25
    expect(apply([1, 1, 1], [0, 2, 0, 0], { frequencyPenalty: 0.5, presencePenalty: 0.25 })).toEqual([-0.75, 1, 0.25]);
  });

  it('applies the repeat penalty before subtracting', () => {
    // (3 / 1.5) - 1 * 1 - 0.5
    expect(apply([3], [0], { repeatPenalty: 1.5, frequencyPenalty: 1, presencePenalty: 0.5 })).toEqual([0.5]);
  });

  it('looks only at the last repeatLastN tokens; -1 means all, 0 none', () => {
    const history = [0, 1, 2];
    expect(apply([2, 2, 2], history, { repeatPenalty: 2, repeatLastN: 2 })).toEqual([2, 1, 1]);
    expect(apply([2, 2, 2], history, { repeatPenalty: 2, repeatLastN: -1 })).toEqual([1, 1, 1]);
    expect(apply([2, 2, 2], history, { repeatPenalty: 2, repeatLastN: 0 })).toEqual([2, 2, 2]);
    expect(apply([2, 2, 2], history, { repeatPenalty: 2, repeatLastN: 100 })).toEqual([1, 1, 1]);
  });

  it('ignores ids outside the vocabulary', () => {
    expect(apply([2, 2], [5, -1, 1.5, NaN, 1], { repeatPenalty: 2, frequencyPenalty: 1 })).toEqual([2, 0]);
  });

  it('leaves the scratch counts all zero for the next call', () => {
    const counts = new Uint32Array(3);
    const row = new Float32Array([1, 1, 1]);
    repetitionPenalties(row, [0, 0, 2], { ...off, frequencyPenalty: 1 }, counts);
    expect(Array.from(row)).toEqual([-1, 1, 0]);
    expect(Array.from(counts)).toEqual([0, 0, 0]);
  });

  it('does nothing when every penalty is neutral', () => {
    expect(apply([3, -3], [0, 1], {})).toEqual([3, -3]);
  });
});
