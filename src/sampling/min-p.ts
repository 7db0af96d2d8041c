// Min-p: keep tokens whose probability is at least p times the top token's
// (llama.cpp llama_sampler_min_p). p <= 0 disables it.
import type { Candidates } from './candidates.js';

/**
 * Drops candidates with logit < maxLogit + ln(p), keeping their order. The top token always
 * survives, since ln(p) <= 0.
 */
export function minP(c: Candidates, p: number): void {
  if (p <= 0 || c.size === 0) return;
  const threshold = c.maxLogit() + Math.log(p);
  let kept = 0;
  for (let i = 0; i < c.size; i++) {
    if (c.logits[i] >= threshold) {
      c.ids[kept] = c.ids[i];
      c.logits[kept] = c.logits[i];
      kept++;
    } else if (c.sorted) {
      break;
    }
  }
  c.size = kept;
}
