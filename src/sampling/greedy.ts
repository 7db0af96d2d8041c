// Greedy decoding: the index of the highest logit.
import { native } from '../native/binding.js';

/**
 * Argmax with the lowest index on ties, so it is deterministic. NaN never wins; a row with no
 * comparable value (all NaN) gives 0. A Float32Array row goes to the addon's argmax (the same
 * answer, SIMD over the row: a vocabulary of 152k takes about 130 us in this loop, a tenth of
 * that there, once per decoded token).
 */
export function greedy(logits: ArrayLike<number>): number {
  if (logits.length === 0) throw new RangeError('greedy needs at least one logit');
  if (logits instanceof Float32Array) return native().argmax(logits);
  return greedyLoop(logits);
}

/** The definition: one pass, the first strictly larger value wins. */
export function greedyLoop(logits: ArrayLike<number>): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i];
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}
