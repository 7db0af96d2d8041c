// Request sampling fields (OpenAI and Anthropic names and ranges) -> the runtime's SamplingOptions.
import { InvalidArgumentError } from '../errors.js';
import type { SamplingOptions } from '../sampling/sampling-options.js';
import { type Fields, invalid } from './fields.js';

/** OpenAI's documented bound on a logit_bias value. */
const MAX_LOGIT_BIAS = 100;
/** A bias table larger than the vocabulary of any model kiln runs is not a real request. */
const MAX_LOGIT_BIAS_ENTRIES = 300_000;

function nucleus(f: Fields, key: string, out: SamplingOptions): void {
  const topP = f.number(key, { min: 0, max: 1 });
  // top_p -> 0 keeps only the most likely token: that is greedy decoding.
  if (topP === 0) out.temperature = 0;
  else if (topP !== undefined) out.topP = topP;
}

export function openAISampling(f: Fields, vocabSize: number): SamplingOptions {
  const out: SamplingOptions = {};
  const temperature = f.number('temperature', { min: 0, max: 2 });
  if (temperature !== undefined) out.temperature = temperature;
  nucleus(f, 'top_p', out);
  const topK = f.number('top_k', { min: 0, integer: true });
  if (topK !== undefined) out.topK = topK;
  const minP = f.number('min_p', { min: 0, max: 1 });
  if (minP !== undefined) out.minP = minP;
  const presence = f.number('presence_penalty', { min: -2, max: 2 });
  if (presence !== undefined) out.presencePenalty = presence;
  const frequency = f.number('frequency_penalty', { min: -2, max: 2 });
  if (frequency !== undefined) out.frequencyPenalty = frequency;
  const repetition = f.number('repetition_penalty', { min: Number.MIN_VALUE, max: 100 });
  if (repetition !== undefined) out.repeatPenalty = repetition;
  const seed = f.number('seed', { integer: true });
  if (seed !== undefined) out.seed = seed;
  const bias = f.object('logit_bias');
  if (bias !== undefined) out.logitBias = logitBias(bias, vocabSize);
  return out;
}

export function anthropicSampling(f: Fields): SamplingOptions {
  const out: SamplingOptions = {};
  const temperature = f.number('temperature', { min: 0, max: 1 });
  if (temperature !== undefined) out.temperature = temperature;
  nucleus(f, 'top_p', out);
  const topK = f.number('top_k', { min: 0, integer: true });
  if (topK !== undefined) out.topK = topK;
  return out;
}

function logitBias(f: Fields, vocabSize: number): Record<number, number> {
  const entries = Object.entries(f.obj);
  if (entries.length > MAX_LOGIT_BIAS_ENTRIES) {
    throw new InvalidArgumentError(`'logit_bias' may have at most ${MAX_LOGIT_BIAS_ENTRIES} entries, got ${entries.length}.`, 'logit_bias');
  }
  const out: Record<number, number> = {};
  for (const [key, value] of entries) {
    const id = /^(0|[1-9][0-9]{0,9})$/.test(key) ? Number(key) : -1;
    if (id < 0 || id >= vocabSize) {
      throw new InvalidArgumentError(`'logit_bias' keys must be token ids in [0, ${vocabSize}), got ${JSON.stringify(key)}.`, 'logit_bias');
    }
    if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > MAX_LOGIT_BIAS) {
      throw invalid(`logit_bias.${key}`, `a number in [-${MAX_LOGIT_BIAS}, ${MAX_LOGIT_BIAS}]`, value);
    }
    out[id] = value;
  }
  return out;
}
