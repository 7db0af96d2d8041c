import { describe, expect, it } from 'vitest';
import { Candidates } from '../../../src/sampling/candidates.js';
import { topK } from '../../../src/sampling/top-k.js';
import { topP } from '../../../src/sampling/top-p.js';
import { prng } from '../../helpers/prng.js';

/** The live ids in ascending order: top-p keeps a set, in no promised order. */
function liveIds(c: Candidates): number[] {
  return Array.from(c.ids.subarray(0, c.size)).sort((a, b) => a - b);
}

function candidates(logits: number[] | Float32Array): Candidates {
  const c = new Candidates(logits.length);
  c.reset(logits);
  return c;
}

/** Nucleus by the textbook recipe: full sort, softmax, smallest prefix reaching p. */
function nucleusIds(logits: Float32Array, p: number): number[] {
  const order = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a] || a - b);
  const max = logits[order[0]];
  const sum = order.reduce((s, i) => s + Math.exp(logits[i] - max), 0);
  let cumulative = 0;
  for (let i = 0; i < order.length; i++) {
    cumulative += Math.exp(logits[order[i]] - max) / sum;
    if (cumulative >= p) return order.slice(0, i + 1);
  }
  return order;
}

// Logits ln(prob) for probabilities 0.05, 0.5, 0.15, 0.3 (ids 0..3).
const probs = [0.05, 0.5, 0.15, 0.3];
const logits = probs.map(Math.log);

describe('topP', () => {
  it('keeps the smallest best-first prefix whose mass reaches p', () => {
    const cases: Array<[number, number[]]> = [
      [0.4, [1]], // 0.5
      [0.75, [1, 3]], // 0.8
      [0.9, [1, 2, 3]], // 0.95
      [0.99, [0, 1, 2, 3]],
    ];
    for (const [p, ids] of cases) {
      const c = candidates(logits);
      topP(c, p);
      expect(liveIds(c)).toEqual(ids);
    }
  });

  it('always keeps at least the top token', () => {
    const c = candidates(logits);
    topP(c, 1e-9);
    expect(liveIds(c)).toEqual([1]);
  });

  it('is a no-op at p = 1', () => {
    const c = candidates(logits);
    topP(c, 1);
    expect(c.size).toBe(4);
    expect(c.sorted).toBe(false);
  });

  it('measures mass over the candidates top-k left', () => {
    const c = candidates(logits);
    topK(c, 2); // renormalized: 0.5/0.8 = 0.625, 0.3/0.8 = 0.375
    topP(c, 0.6);
    expect(Array.from(c.ids.subarray(0, c.size))).toEqual([1]);
    expect(c.sorted).toBe(true);
  });

  it('agrees with a full sort on random vocabularies, including wide nuclei', () => {
    const rng = prng(5);
    const cases = [[10, 0.5, 4], [3000, 0.9, 2], [3000, 0.95, 0.1], [40_000, 0.99, 0.01], [40_000, 0.3, 8], [50, 0.5, 0]];
    for (const [n, p, spread] of cases) {
      const row = Float32Array.from({ length: n }, () => Math.round(rng.next() * 1000) / 1000 * spread);
      const c = candidates(row);
      topP(c, p);
      expect(liveIds(c)).toEqual(nucleusIds(row, p).sort((a, b) => a - b));
    }
  });
});

describe('topP on peaked and tied rows', () => {
  it('breaks ties at the cut toward lower ids', () => {
    const c = candidates([0, 0, 0, 0]); // 0.25 each
    topP(c, 0.5);
    expect(liveIds(c)).toEqual([0, 1]);
  });

  it('finds a one-token nucleus in a large peaked row', () => {
    const row = new Float32Array(100_000).fill(-20);
    row[77_777] = 10;
    const c = candidates(row);
    topP(c, 0.9);
    expect(liveIds(c)).toEqual([77_777]);
  });

  it('keeps banned tokens out unless everything is banned', () => {
    const c = candidates([-Infinity, 1, 1, -Infinity]);
    topP(c, 0.999);
    expect(liveIds(c)).toEqual([1, 2]);
  });
});
