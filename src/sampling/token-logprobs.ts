// Log-probabilities for `logprobs`: the sampled token's and the most likely alternatives', read from
// the model's raw distribution (log-softmax of the logits before penalties, bias, truncation and
// temperature), as OpenAI and llama.cpp report them. Two passes over the row plus a bounded
// insertion for the alternatives; nothing runs unless a request asks.

/** OpenAI's limit on alternatives per position. */
export const MAX_TOP_LOGPROBS = 20;

export interface IdLogprob {
  id: number;
  logprob: number;
}

export interface LogprobsAt extends IdLogprob {
  /** The `top` most likely tokens, best first (ties: lower id first). */
  top: IdLogprob[];
}

/** The log-probability of token `id` in `logits` and of the `top` (0..MAX_TOP_LOGPROBS) most likely tokens. */
export function logprobsAt(logits: ArrayLike<number>, id: number, top: number): LogprobsAt {
  const n = logits.length;
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  // NaN logits count as impossible; an all-NaN or all -Infinity row gives -Infinity everywhere.
  for (let i = 0; i < n; i++) {
    const v = logits[i]!;
    if (v > -Infinity) sum += Math.exp(v - max);
  }
  const logSum = max + Math.log(sum);
  const lp = (i: number) => {
    const v = logits[i]!;
    return v > -Infinity ? v - logSum : -Infinity;
  };

  const best: IdLogprob[] = [];
  if (top > 0) {
    // `best` stays sorted, best first; a token enters only if it beats the current worst.
    for (let i = 0; i < n; i++) {
      const v = logits[i]!;
      if (!(v > -Infinity)) continue;
      if (best.length === top) {
        if (v <= logits[best[top - 1]!.id]!) continue;
        best.pop();
      }
      let at = best.length;
      while (at > 0 && v > logits[best[at - 1]!.id]!) at--;
      best.splice(at, 0, { id: i, logprob: 0 });
    }
    for (const b of best) b.logprob = lp(b.id);
  }
  return { id, logprob: lp(id), top: best };
}
