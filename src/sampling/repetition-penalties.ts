// Repetition, presence and frequency penalties over the last N tokens, with llama.cpp's semantics
// (llama_sampler_penalties): a repeated token's logit is divided by the repeat penalty when
// positive and multiplied by it otherwise, then count * frequency + presence is subtracted.

export interface PenaltyOptions {
  /** > 0; 1 disables. */
  repeatPenalty: number;
  /** How many of the latest tokens count: -1 the whole history, 0 none. */
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
}

/** Whether the penalties can change any logit for a history of this length. */
export function penaltiesApply(options: PenaltyOptions, historyLength: number): boolean {
  const { repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty } = options;
  return historyLength > 0 && repeatLastN !== 0 && (repeatPenalty !== 1 || presencePenalty !== 0 || frequencyPenalty !== 0);
}

/**
 * Applies the penalties to `logits` in place. Ids in `history` outside the vocabulary are ignored.
 * `counts` is scratch of at least `logits.length` zeros; it is left all zero again, so a sampler
 * can pass the same array every token instead of allocating.
 */
export function repetitionPenalties(
  logits: Float32Array,
  history: ArrayLike<number>,
  options: PenaltyOptions,
  counts: Uint32Array = new Uint32Array(logits.length),
): void {
  const { repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty } = options;
  if (!penaltiesApply(options, history.length)) return;
  const n = logits.length;
  const end = history.length;
  const start = repeatLastN < 0 ? 0 : Math.max(0, end - repeatLastN);

  const inVocabulary = (t: number): boolean => t >= 0 && t < n && Number.isInteger(t);
  for (let i = start; i < end; i++) {
    const t = history[i];
    if (inVocabulary(t)) counts[t]++;
  }
  for (let i = start; i < end; i++) {
    const t = history[i];
    if (!inVocabulary(t) || counts[t] === 0) continue; // zero: this token was already penalized
    const count = counts[t];
    counts[t] = 0;
    let v = logits[t];
    v = v <= 0 ? v * repeatPenalty : v / repeatPenalty;
    logits[t] = v - count * frequencyPenalty - presencePenalty;
  }
}
