// Log-probabilities of a logit row, for logprobs and tests. Accumulates in float64.

/** log(softmax(logits)), computed as logit - max - log(sum(exp(logit - max))). */
export function logSoftmax(logits: ArrayLike<number>): Float32Array {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i] - max);
  const logSum = max + Math.log(sum);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = logits[i] - logSum;
  return out;
}
