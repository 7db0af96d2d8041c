import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../src/errors.js';
import { greedyLoop } from '../../../src/sampling/greedy.js';
import { Sampler } from '../../../src/sampling/sampler.js';
import { prng } from '../../helpers/prng.js';

function randomLogits(n: number, seed: number): Float32Array {
  const rng = prng(seed);
  return Float32Array.from({ length: n }, () => (rng.next() - 0.5) * 20);
}

function draw(sampler: Sampler, logits: Float32Array, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(sampler.sample(logits, out));
  return out;
}

describe('Sampler', () => {
  it('at temperature 0 is the argmax, lowest index on ties', () => {
    const s = new Sampler({ temperature: 0 });
    expect(s.sample(new Float32Array([1, 9, 3, 9]), [])).toBe(1);
  });

  it('at temperature 0 still applies penalties and logit bias first', () => {
    const logits = new Float32Array([5, 4, 1]);
    expect(new Sampler({ temperature: 0, repeatPenalty: 2 }).sample(logits, [0])).toBe(1); // 2.5 < 4
    expect(new Sampler({ temperature: 0, logitBias: { 0: -Infinity, 1: -Infinity } }).sample(logits, [])).toBe(2);
    expect(new Sampler({ temperature: 0, presencePenalty: 2 }).sample(logits, [0])).toBe(1);
  });

  it('does not modify the caller\'s logits', () => {
    const logits = new Float32Array([5, 4, 1]);
    new Sampler({ temperature: 0.7, repeatPenalty: 2, logitBias: { 2: 3 }, seed: 1 }).sample(logits, [0, 1]);
    expect(Array.from(logits)).toEqual([5, 4, 1]);
  });

  it('at temperature 0 with a bias alone, picks the argmax of the biased row and leaves the row as it was', () => {
    // This path adds the bias in place and puts the entries back, instead of copying the row.
    const logits = randomLogits(32_000, 5);
    logits[7] = NaN;
    logits[9] = -0;
    const before = new Uint32Array(logits.slice().buffer);
    const bias: Record<number, number> = { 9: 0.25, 11: -Infinity, 31_999: 1.5 };
    let best = 0;
    for (let i = 0; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
    bias[best] = -Infinity;
    const biased = logits.slice();
    for (const [id, b] of Object.entries(bias)) biased[Number(id)] += b;
    expect(new Sampler({ temperature: 0, logitBias: bias }).sample(logits, [1, 2, 3])).toBe(greedyLoop(biased));
    expect(new Uint32Array(logits.buffer)).toEqual(before);
    // A bias naming a token past the row throws, and the row is still as it was.
    expect(() => new Sampler({ temperature: 0, logitBias: { 3: 5, 40_000: 1 } }).sample(logits, [])).toThrow(InvalidArgumentError);
    expect(new Uint32Array(logits.buffer)).toEqual(before);
  });

  it('with nothing narrowing the candidates, draws what reset, temperature and dist draw', () => {
    // The defaults take the addon's one-pass draw; a min-p far below every logit keeps the whole
    // row in id order and goes through the candidates instead. Same seed, same tokens (their
    // draws differ only where u falls within rounding of a token's edge).
    const logits = randomLogits(32_000, 8);
    logits[100] = 12;
    logits[200] = NaN;
    for (const temperature of [1, 0.7, 1.3]) {
      const fast = draw(new Sampler({ temperature, seed: 77 }), logits, 300);
      const slow = draw(new Sampler({ temperature, minP: 1e-300, seed: 77 }), logits, 300);
      expect(fast).toEqual(slow);
      expect(new Set(fast).size).toBeGreaterThan(10);
    }
  });

  it('gives the same tokens for the same seed and settings, and others for another seed', () => {
    const logits = randomLogits(32_000, 1).map((v) => v / 4);
    const options = { temperature: 0.9, topK: 50, topP: 0.95, minP: 0.01, repeatPenalty: 1.1, seed: 1234 };
    const a = draw(new Sampler(options), logits, 100);
    expect(draw(new Sampler(options), logits, 100)).toEqual(a);
    expect(draw(new Sampler({ ...options, seed: 4321 }), logits, 100)).not.toEqual(a);
  });

  it('reports the seed it used so a random-seeded run can be replayed', () => {
    const logits = randomLogits(1000, 2).map((v) => v / 10);
    const first = new Sampler({ temperature: 1 });
    const a = draw(first, logits, 50);
    expect(draw(new Sampler({ temperature: 1, seed: first.seed }), logits, 50)).toEqual(a);
  });

  it('top-k 1 is greedy at any temperature', () => {
    const logits = randomLogits(5000, 3);
    const best = new Sampler({ temperature: 0 }).sample(logits, []);
    const s = new Sampler({ temperature: 5, topK: 1, seed: 9 });
    for (let i = 0; i < 20; i++) expect(s.sample(logits, [])).toBe(best);
  });

  it('samples only tokens that survive top-k, top-p and min-p', () => {
    // Probabilities 0.4, 0.3, 0.2, 0.06, 0.04.
    const logits = new Float32Array([0.4, 0.3, 0.2, 0.06, 0.04].map(Math.log));
    const seen = (options: ConstructorParameters<typeof Sampler>[0]): number[] => {
      const s = new Sampler({ ...options, seed: 5 });
      return [...new Set(Array.from({ length: 2000 }, () => s.sample(logits, [])))].sort();
    };
    expect(seen({ topK: 2 })).toEqual([0, 1]);
    expect(seen({ topP: 0.85 })).toEqual([0, 1, 2]);
    expect(seen({ minP: 0.4 })).toEqual([0, 1, 2]); // threshold 0.16
    expect(seen({ topK: 4, topP: 0.95, minP: 0.2 })).toEqual([0, 1, 2]);
    expect(seen({})).toEqual([0, 1, 2, 3, 4]);
  });

  it('matches the tempered softmax in frequency', () => {
    const logits = new Float32Array([0, Math.log(3)]);
    const s = new Sampler({ temperature: 0.5, seed: 77 });
    const n = 40_000;
    let ones = 0;
    for (let i = 0; i < n; i++) ones += s.sample(logits, []);
    const p = 0.9; // 3^2 / (1 + 3^2)
    expect(Math.abs(ones - n * p)).toBeLessThan(5 * Math.sqrt(n * p * (1 - p)));
  });

  it('never samples a banned token', () => {
    const logits = new Float32Array([10, 0, 0]);
    const s = new Sampler({ temperature: 2, logitBias: { 0: -Infinity }, seed: 3 });
    for (let i = 0; i < 500; i++) expect(s.sample(logits, [])).not.toBe(0);
  });

  it('with allowed tokens picks only among them: their argmax at temperature 0, their softmax otherwise', () => {
    const logits = new Float32Array([10, 1, 3, 2, 9]);
    expect(new Sampler({ temperature: 0 }).sample(logits, [], [1, 3, 2])).toBe(2);
    expect(new Sampler({ temperature: 0 }).sample(logits, [], [3, 1])).toBe(3);
    // Ties go to the lowest id, whatever order the ids come in.
    expect(new Sampler({ temperature: 0 }).sample(new Float32Array([0, 5, 5]), [], [2, 1])).toBe(1);
    const s = new Sampler({ temperature: 1, topK: 2, seed: 5 });
    const seen = new Set<number>();
    for (let i = 0; i < 500; i++) seen.add(s.sample(logits, [], [1, 2, 3]));
    expect([...seen].sort()).toEqual([2, 3]);
  });

  it('with allowed tokens that are all banned still picks one of them', () => {
    const logits = new Float32Array([10, 1, 3]);
    const bias = { 1: -Infinity, 2: -Infinity };
    expect([1, 2]).toContain(new Sampler({ temperature: 0, logitBias: bias }).sample(logits, [], [1, 2]));
    const s = new Sampler({ temperature: 0.7, logitBias: bias, seed: 2 });
    for (let i = 0; i < 100; i++) expect([1, 2]).toContain(s.sample(logits, [], [1, 2]));
  });

  it('with a bitset of allowed tokens draws exactly as with the same ids listed', () => {
    const logits = randomLogits(151_936, 9).map((v) => v / 3);
    // Scattered ids, two whole words (96-159) and the row's last word whole.
    const ids = [5, 77, 1000, 40_001, 31, 32, 63, ...Array.from({ length: 64 }, (_, i) => 96 + i), ...Array.from({ length: 32 }, (_, i) => 151_904 + i)];
    const mask = new Uint32Array(Math.ceil(logits.length / 32));
    for (const id of ids) mask[id >>> 5]! |= 1 << (id & 31);
    const options = { temperature: 0.8, topK: 5, topP: 0.9, seed: 3 };
    const a = new Sampler(options);
    const b = new Sampler(options);
    for (let i = 0; i < 200; i++) expect(a.sample(logits, [], mask)).toBe(b.sample(logits, [], ids));
    expect(new Sampler({ temperature: 0 }).sample(logits, [], mask)).toBe(new Sampler({ temperature: 0 }).sample(logits, [], ids));
    expect(() => new Sampler().sample(logits, [], new Uint32Array(mask.length))).toThrow(/allows no token/);
    expect(() => new Sampler().sample(logits, [], new Uint32Array(3))).toThrow(/does not fit/);
  });

  it('with every bit of a bitset set draws as without one, past a row that ends mid-word', () => {
    const logits = randomLogits(1000, 4); // 31 whole words and 8 tokens of a 32nd
    const all = new Uint32Array(32).fill(0xffffffff);
    const a = new Sampler({ temperature: 0.9, seed: 5 });
    const b = new Sampler({ temperature: 0.9, seed: 5 });
    for (let i = 0; i < 200; i++) expect(a.sample(logits, [], all)).toBe(b.sample(logits, []));
  });

  it('penalizes repeats over the history the caller passes', () => {
    const logits = new Float32Array([3, 3, 3]);
    const s = new Sampler({ temperature: 0.01, frequencyPenalty: 100, seed: 1 });
    expect(draw(s, logits, 3).sort()).toEqual([0, 1, 2]);
  });

  it('handles a full-size vocabulary and survives a vocabulary change', () => {
    const big = randomLogits(152_064, 4);
    const s = new Sampler({ temperature: 0.8, topK: 40, topP: 0.9, minP: 0.05, repeatPenalty: 1.1, seed: 8 });
    const tokens = draw(s, big, 20);
    expect(tokens.every((t) => t >= 0 && t < big.length)).toBe(true);
    const small = s.sample(new Float32Array([0, 1]), []);
    expect([0, 1]).toContain(small);
    // Plain sampling and top-p alone take the paths without top-k's selection.
    expect(new Sampler({ seed: 1 }).sample(big, [])).toBeLessThan(big.length);
    expect(new Sampler({ topP: 0.95, seed: 1 }).sample(big, [])).toBeLessThan(big.length);
  });

  it('throws InvalidArgumentError for bad options and a logit bias outside the vocabulary', () => {
    expect(() => new Sampler({ temperature: -1 })).toThrow(InvalidArgumentError);
    expect(() => new Sampler({ topP: 0 })).toThrow(/topP/);
    const s = new Sampler({ logitBias: { 10: 1 } });
    expect(() => s.sample(new Float32Array(5), [])).toThrow(InvalidArgumentError);
  });

  it('throws on an empty logit row', () => {
    expect(() => new Sampler().sample(new Float32Array(0), [])).toThrow(RangeError);
  });
});
