// Top-p (nucleus): keep the smallest best-first prefix whose probability reaches p
// (llama.cpp llama_sampler_top_p, min_keep 1). p >= 1 disables it.
import type { Candidates } from './candidates.js';

/**
 * Buckets per refinement round. Sorting 152k logits per token costs tens of milliseconds; instead
 * the logits are histogrammed by value, whole buckets above the cut are kept, and only the bucket
 * the cut falls in is refined again, so a round costs one pass over what is still undecided.
 */
const BUCKETS = 1024;
const bucketMass = new Float64Array(BUCKETS);

/**
 * Narrows `c` to its nucleus of mass `p`. A sorted set stays sorted. An unsorted set (every
 * token, in id order, when top-k did not run) comes out unsorted: the same tokens a full sort
 * would keep, ties at the cut going to the lower id.
 */
export function topP(c: Candidates, p: number): void {
  const n = c.size;
  if (p >= 1 || n === 0) return;
  const { ids, logits, probs } = c;
  c.softmax();
  const target = p; // the probabilities sum to 1 (to rounding; a total short of p keeps everything)

  if (c.sorted) {
    let cumulative = 0;
    for (let i = 0; i < n; i++) {
      cumulative += probs[i];
      if (cumulative >= target) {
        c.size = i + 1;
        return;
      }
    }
    return;
  }

  const { scratchIds: keptIds, scratchLogits: keptLogits } = c;
  let kept = 0;
  let cumulative = 0;
  const keep = (i: number): void => {
    keptIds[kept] = ids[i];
    keptLogits[kept] = logits[i];
    kept++;
    cumulative += probs[i];
  };

  // Undecided candidates are [0, m), compacted in place each round; their order stays id order.
  let m = n;
  for (;;) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < m; i++) {
      if (logits[i] < lo) lo = logits[i];
      if (logits[i] > hi) hi = logits[i];
    }
    if (lo === hi) {
      // All tied: the lower ids rank first.
      for (let i = 0; i < m && cumulative < target; i++) keep(i);
      break;
    }
    // Bucket 0 holds the highest logits. The index is monotone in the logit, so a bucket's
    // members all rank before the next bucket's.
    const scale = (BUCKETS - 1) / (hi - lo);
    const bucketOf = (l: number): number => Math.min(BUCKETS - 1, Math.floor((hi - l) * scale));
    bucketMass.fill(0);
    for (let i = 0; i < m; i++) bucketMass[bucketOf(logits[i])] += probs[i];
    let cut = 0;
    let before = cumulative;
    while (cut < BUCKETS && before + bucketMass[cut] < target) before += bucketMass[cut++];
    if (cut === BUCKETS) {
      // Rounding left the total short of p x sum: everything stays.
      for (let i = 0; i < m; i++) keep(i);
      break;
    }
    let undecided = 0;
    for (let i = 0; i < m; i++) {
      const b = bucketOf(logits[i]);
      if (b < cut) {
        keep(i);
      } else if (b === cut) {
        ids[undecided] = ids[i];
        logits[undecided] = logits[i];
        probs[undecided] = probs[i];
        undecided++;
      }
    }
    m = undecided;
  }
  c.takeScratch(kept);
  c.sorted = false;
}
