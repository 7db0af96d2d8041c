// Temperature: divide the logits by t (> 0); below 1 sharpens the distribution, above 1 flattens it.
// Temperature 0 is greedy decoding, which the Sampler routes to `greedy` instead.
import { type Candidates, FLOAT32_MAX } from './candidates.js';

export function temperature(c: Candidates, t: number): void {
  if (!(t > 0)) throw new RangeError(`temperature must be > 0 here, got ${t}; 0 means greedy`);
  if (t === 1) return;
  // A local copy of the bound: read through the imported binding, it costs this loop 3x at 152k tokens.
  const max = FLOAT32_MAX;
  const { logits } = c;
  for (let i = 0; i < c.size; i++) {
    // A tiny t can overflow float32; clamping keeps the logits finite for softmax.
    const v = logits[i] / t;
    logits[i] = v > max ? max : v < -max ? -max : v;
  }
}
