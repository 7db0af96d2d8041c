// Llama 3.1+ RoPE scaling as llama.cpp stores it: one divisor per rotated pair, in the
// rope_freqs.weight tensor, computed as convert_hf_to_gguf.py computes it (in float32, as torch does).
import type { HfModelConfig } from './hf-config.js';

const f = Math.fround;

/** The rope_freqs.weight values of a model with llama3 rope scaling; null for any other model. */
export function llama3RopeFactors(config: HfModelConfig): Float32Array | null {
  const s = config.ropeScaling;
  if (s === null || s.type !== 'llama3') return null;
  const base = config.ropeTheta ?? 10000;
  const dim = config.headDim;
  const lowFreqWavelen = s.originalContextLength / s.lowFreqFactor;
  const highFreqWavelen = s.originalContextLength / s.highFreqFactor;
  const factors = new Float32Array(dim / 2);
  for (let i = 0; i < dim / 2; i++) {
    const freq = f(1 / f(base ** f(f(2 * i) / dim)));
    const wavelen = f(f(2 * Math.PI) / freq);
    if (wavelen < highFreqWavelen) {
      factors[i] = 1;
    } else if (wavelen > lowFreqWavelen) {
      factors[i] = s.factor;
    } else {
      const smooth = f(f(f(s.originalContextLength / wavelen) - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor));
      factors[i] = f(1 / f(f(f(1 - smooth) / s.factor) + smooth));
    }
  }
  return factors;
}
