// The working set the truncating samplers narrow down (llama.cpp's llama_token_data_array):
// parallel arrays of token ids and logits, sized once to the vocabulary and reused every token.
import { native } from '../native/binding.js';

/** Largest finite float32. Candidate logits are clamped to ±this so softmax never sees Inf - Inf. */
export const FLOAT32_MAX = 3.4028234663852886e38;

export class Candidates {
  /** Token ids; the first `size` entries are live. */
  readonly ids: Int32Array;
  /** Logits, parallel to `ids`; always finite (see reset). */
  readonly logits: Float32Array;
  /** Softmax of the live logits, filled by `softmax()`. */
  readonly probs: Float64Array;
  /** Where selectTop writes the best candidates without disturbing the live set. */
  readonly scratchIds: Int32Array;
  readonly scratchLogits: Float32Array;
  size = 0;
  /** True when the live entries are ordered best first (see ranksBefore). */
  sorted = false;

  constructor(readonly capacity: number) {
    this.ids = new Int32Array(capacity);
    this.logits = new Float32Array(capacity);
    this.probs = new Float64Array(capacity);
    this.scratchIds = new Int32Array(capacity);
    this.scratchLogits = new Float32Array(capacity);
  }

  /**
   * Makes every token a candidate. NaN becomes -FLOAT32_MAX and ±Infinity ±FLOAT32_MAX: a banned
   * (-Infinity) token still gets probability exp(-3.4e38 - max) = 0, while a logit row that is all
   * banned or all NaN degrades to a uniform draw instead of NaN probabilities.
   */
  reset(logits: ArrayLike<number>): void {
    const n = logits.length;
    if (n > this.capacity) throw new RangeError(`${n} logits exceed the candidate capacity ${this.capacity}`);
    const { ids, logits: out } = this;
    for (let i = 0; i < n; i++) {
      ids[i] = i;
      out[i] = finite(logits[i]);
    }
    this.size = n;
    this.sorted = false;
  }

  /**
   * Makes the best `k` (1..logits.length) tokens the candidates, best first: reset() then top-k,
   * in one pass of the addon's over the row instead of a copy of it and a heap in JS.
   */
  resetToTop(logits: Float32Array, k: number): void {
    if (k > this.capacity) throw new RangeError(`${k} candidates exceed the capacity ${this.capacity}`);
    native().topK(logits, k, this.ids, this.logits);
    this.size = k;
    this.sorted = true;
  }

  /**
   * Makes the nucleus of mass p (0 < p < 1) the candidates, best first: reset() then top-p, in
   * the addon (the best 64, 512, ... until they hold p). False, and nothing changed, when it would
   * take more than `maxK` tokens (a flat distribution): top-p's histogram does those.
   */
  resetToNucleus(logits: Float32Array, p: number, maxK: number): boolean {
    const k = native().nucleus(logits, p, Math.min(maxK, logits.length, this.capacity), this.ids, this.logits);
    if (k < 0) return false;
    this.size = k;
    this.sorted = true;
    return true;
  }

  /**
   * Makes the tokens within ln(p) of the best (0 < p <= 1) the candidates, in id order: reset()
   * then min-p, in one pass of the addon's over the row.
   */
  resetToMinP(logits: Float32Array, p: number): void {
    if (logits.length > this.capacity) throw new RangeError(`${logits.length} logits exceed the candidate capacity ${this.capacity}`);
    const threshold = finite(logits[native().argmax(logits)]!) + Math.log(p);
    this.size = native().keepAtLeast(logits, threshold, this.ids, this.logits);
    this.sorted = false;
  }

  /** Makes only the tokens `ids` (distinct, at least one) candidates, clamped as reset() does. */
  resetTo(logits: ArrayLike<number>, ids: readonly number[]): void {
    if (ids.length === 0 || ids.length > this.capacity) throw new RangeError(`${ids.length} allowed tokens: expected 1 to ${this.capacity}`);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const v = logits[id];
      if (v === undefined) throw new RangeError(`allowed token ${id} is outside the ${logits.length} logits`);
      this.ids[i] = id;
      this.logits[i] = finite(v);
    }
    this.size = ids.length;
    this.sorted = false;
  }

  /**
   * Makes only the tokens whose bit is set in `mask` candidates (bit i % 32 of word i >> 5; at
   * least one), clamped as reset() does. Reads the bitset word by word, skipping empty words: no
   * list of ids is built.
   */
  resetToMask(logits: ArrayLike<number>, mask: Uint32Array): void {
    const n = logits.length;
    if (mask.length !== (n + 31) >>> 5) throw new RangeError(`a mask of ${mask.length} words does not fit ${n} logits`);
    let size = 0;
    const whole = n >>> 5; // words whose 32 tokens are all inside the row
    for (let w = 0; w < mask.length; w++) {
      if (mask[w] === 0xffffffff && w < whole) {
        // A word of all-allowed tokens (most of them, under a string's or a free value's mask).
        for (let id = w << 5, end = id + 32; id < end; id++) {
          const v = logits[id]!;
          this.ids[size] = id;
          this.logits[size++] = finite(v);
        }
        continue;
      }
      for (let bits = mask[w]!; bits !== 0; bits &= bits - 1) {
        const id = (w << 5) | (31 - Math.clz32(bits & -bits));
        if (id >= n) break;
        const v = logits[id]!;
        this.ids[size] = id;
        this.logits[size++] = finite(v);
      }
    }
    if (size === 0) throw new RangeError('the mask allows no token');
    this.size = size;
    this.sorted = false;
  }

  /** Keeps the first `k` entries of the scratch arrays (written by selectTop) as the live set. */
  takeScratch(k: number): void {
    this.ids.set(this.scratchIds.subarray(0, k));
    this.logits.set(this.scratchLogits.subarray(0, k));
    this.size = k;
    this.sorted = true;
  }

  /** Highest live logit. */
  maxLogit(): number {
    if (this.sorted) return this.logits[0];
    let max = -Infinity;
    for (let i = 0; i < this.size; i++) if (this.logits[i] > max) max = this.logits[i];
    return max;
  }

  /**
   * Fills `probs[0..size)` with the softmax of the live logits, in the addon: expf of each logit
   * less the largest, summed in double (see softmax in src/native/binding.ts). The whole vocabulary
   * (no truncating sampler, a request's defaults) is 152k exps a token: 1.4 ms with Math.exp, a
   * few tens of microseconds there.
   */
  softmax(): void {
    native().softmax(this.logits, this.size, this.probs);
  }
}

/** A logit clamped to ±FLOAT32_MAX, NaN to -FLOAT32_MAX (see Candidates.reset). */
function finite(v: number): number {
  const max = 3.4028234663852886e38; // FLOAT32_MAX; a literal, where the exported binding costs reset 3x at 152k tokens
  return v >= max ? max : v > -max ? v : -max;
}

/** True when (logitA, idA) ranks before (logitB, idB): higher logit first, lower id on ties. */
export function ranksBefore(logitA: number, idA: number, logitB: number, idB: number): boolean {
  return logitA > logitB || (logitA === logitB && idA < idB);
}
