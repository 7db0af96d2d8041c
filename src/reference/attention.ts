// Reference causal grouped-query attention over a KV history; dot products accumulate in float64.
import { softmax } from './softmax.js';

export interface AttentionOptions {
  nTokens: number;
  nHeads: number;
  /** Divides nHeads; query head h reads KV head floor(h / (nHeads / nKvHeads)). */
  nKvHeads: number;
  headDim: number;
  /** Multiplies q.k, usually 1 / sqrt(headDim). */
  scale: number;
  /** (nTokens) position of each query; query at position p attends to cache rows 0..p. */
  positions: Int32Array;
  /** Rows in the k and v caches; every position must be < kvLength. */
  kvLength: number;
}

/**
 * q: (nTokens, nHeads * headDim); k, v: (kvLength, nKvHeads * headDim), row j holding position j.
 * Returns (nTokens, nHeads * headDim): per head, softmax(scale * q.k_j for j <= p) weighting v_j.
 */
export function attention(q: Float32Array, k: Float32Array, v: Float32Array, options: AttentionOptions): Float32Array {
  const { nTokens, nHeads, nKvHeads, headDim, scale, positions, kvLength } = options;
  if (nHeads % nKvHeads !== 0) throw new RangeError(`attention: nHeads ${nHeads} is not a multiple of nKvHeads ${nKvHeads}`);
  if (q.length !== nTokens * nHeads * headDim) throw new RangeError(`attention: q has ${q.length} values`);
  const kvWidth = nKvHeads * headDim;
  if (k.length !== kvLength * kvWidth || v.length !== kvLength * kvWidth) {
    throw new RangeError(`attention: k/v must hold ${kvLength} x ${kvWidth} values, got ${k.length} and ${v.length}`);
  }
  if (positions.length !== nTokens) throw new RangeError(`attention: ${positions.length} positions for ${nTokens} tokens`);
  const group = nHeads / nKvHeads;

  const out = new Float32Array(q.length);
  for (let t = 0; t < nTokens; t++) {
    const p = positions[t];
    if (p < 0 || p >= kvLength) throw new RangeError(`attention: position ${p} outside the cache of ${kvLength}`);
    for (let h = 0; h < nHeads; h++) {
      const qOff = (t * nHeads + h) * headDim;
      const kvOff = Math.floor(h / group) * headDim;
      const scores = new Float32Array(p + 1);
      for (let j = 0; j <= p; j++) {
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += q[qOff + d] * k[j * kvWidth + kvOff + d];
        scores[j] = dot * scale;
      }
      const weights = softmax(scores, 1, p + 1);
      for (let d = 0; d < headDim; d++) {
        let acc = 0;
        for (let j = 0; j <= p; j++) acc += weights[j] * v[j * kvWidth + kvOff + d];
        out[qOff + d] = acc;
      }
    }
  }
  return out;
}
