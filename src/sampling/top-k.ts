// Top-k: keep the k most likely tokens (llama.cpp llama_sampler_top_k). k <= 0 disables it.
import type { Candidates } from './candidates.js';
import { selectTop } from './select-top.js';

/** Narrows `c` to its best `k` candidates and leaves them sorted best first. */
export function topK(c: Candidates, k: number): void {
  if (k <= 0 || c.size === 0) return;
  if (k > c.size) k = c.size;
  if (c.sorted) {
    c.size = k;
    return;
  }
  selectTop(c, k);
  c.takeScratch(k);
}
