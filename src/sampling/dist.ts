// The final draw: one token from the softmax of the remaining candidates, using the seeded PRNG.
import type { Candidates } from './candidates.js';
import type { Prng } from './prng.js';

export function dist(c: Candidates, rng: Prng): number {
  if (c.size === 0) throw new RangeError('no candidates left to sample from');
  c.softmax();
  const u = rng.nextFloat();
  let cumulative = 0;
  for (let i = 0; i < c.size; i++) {
    cumulative += c.probs[i];
    if (u < cumulative) return c.ids[i];
  }
  // Rounding left the total a hair below u: the last candidate that has any mass.
  for (let i = c.size - 1; i > 0; i--) if (c.probs[i] > 0) return c.ids[i];
  return c.ids[0];
}
