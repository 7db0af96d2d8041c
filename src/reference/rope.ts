// Reference rotary position embedding with ggml's semantics (ggml_rope_ext, ext_factor 0 so no
// YaRN ramp, attn_factor 1), angles in float64.

export interface RopeOptions {
  /** Rotated dimensions per head (even, <= headDim); the rest pass through. */
  nRot: number;
  /** 'normal' rotates adjacent pairs (x[2i], x[2i+1]); 'neox' rotates (x[i], x[i + nRot/2]). */
  mode: 'normal' | 'neox';
  freqBase: number;
  freqScale: number;
  /** nRot/2 per-pair divisors of the angle (Llama 3 rope factors), or none. */
  freqFactors?: Float32Array;
}

/**
 * x: (nTokens, nHeads, headDim); positions: (nTokens). Pair i of a token at position p turns by
 * theta_i = p * freqScale * freqBase^(-2i / nRot) / freqFactors[i]:
 * (a, b) -> (a cos - b sin, a sin + b cos). Returns the rotated copy.
 */
export function rope(
  x: Float32Array,
  nTokens: number,
  nHeads: number,
  headDim: number,
  positions: Int32Array,
  options: RopeOptions,
): Float32Array {
  const { nRot, mode, freqBase, freqScale, freqFactors } = options;
  if (x.length !== nTokens * nHeads * headDim) {
    throw new RangeError(`rope: x has ${x.length} values, expected ${nTokens} x ${nHeads} x ${headDim}`);
  }
  if (positions.length !== nTokens) throw new RangeError(`rope: ${positions.length} positions for ${nTokens} tokens`);
  if (nRot % 2 !== 0 || nRot > headDim) throw new RangeError(`rope: nRot ${nRot} must be even and <= headDim ${headDim}`);
  const half = nRot / 2;
  if (freqFactors && freqFactors.length < half) throw new RangeError(`rope: need ${half} freqFactors, got ${freqFactors.length}`);

  const y = Float32Array.from(x);
  for (let t = 0; t < nTokens; t++) {
    for (let h = 0; h < nHeads; h++) {
      const head = (t * nHeads + h) * headDim;
      for (let i = 0; i < half; i++) {
        const theta = (positions[t] * freqScale * freqBase ** (-2 * i / nRot)) / (freqFactors ? freqFactors[i] : 1);
        const a = head + (mode === 'neox' ? i : 2 * i);
        const b = head + (mode === 'neox' ? i + half : 2 * i + 1);
        y[a] = x[a] * Math.cos(theta) - x[b] * Math.sin(theta);
        y[b] = x[a] * Math.sin(theta) + x[b] * Math.cos(theta);
      }
    }
  }
  return y;
}
