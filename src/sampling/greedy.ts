// Greedy decoding: the index of the highest logit.

/**
 * Argmax with the lowest index on ties, so it is deterministic. NaN never wins; a row with no
 * comparable value (all NaN) gives 0.
 */
export function greedy(logits: ArrayLike<number>): number {
  if (logits.length === 0) throw new RangeError('greedy needs at least one logit');
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
