// Hyperparameters of a decoder model, read from GGUF metadata and checked.
import type { GgufFile } from '../gguf/types.js';
import { InvalidHyperparameterError, UnsupportedArchitectureError } from './errors.js';

/** Architecture variants: one decoder graph, switched by these features. */
export interface ArchitectureFeatures {
  /** NeoX-style RoPE pairs (i, i + d/2) instead of adjacent pairs. */
  ropeNeox: boolean;
  /** Q/K/V projections carry biases (Qwen2). */
  qkvBias: boolean;
  /** RMS norm of each Q and K head before RoPE (Qwen3). */
  qkNorm: boolean;
}

export const ARCHITECTURES: Record<string, ArchitectureFeatures> = {
  llama: { ropeNeox: false, qkvBias: false, qkNorm: false },
  qwen2: { ropeNeox: true, qkvBias: true, qkNorm: false },
  qwen3: { ropeNeox: true, qkvBias: false, qkNorm: true },
};

export interface HParams {
  architecture: string;
  features: ArchitectureFeatures;
  nLayers: number;
  dim: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  ffnDim: number;
  vocabSize: number;
  contextLength: number;
  rmsEps: number;
  ropeBase: number;
  /** Multiplies positions: 1 / linear scaling factor. */
  ropeFreqScale: number;
  ropeDims: number;
}

// Generous upper bounds that keep a hostile header from asking for absurd buffers.
const MAX_LAYERS = 1024; // the largest open models have under 200
const MAX_DIM = 1 << 17;
const MAX_HEADS = 1024;
const MAX_VOCAB = 1 << 22;

function num(file: GgufFile, key: string, fallback?: number): number {
  const v = file.metadata.get(key);
  if (v === undefined) {
    if (fallback !== undefined) return fallback;
    throw new InvalidHyperparameterError(key, 'missing; the file lacks a required hyperparameter');
  }
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(v);
  throw new InvalidHyperparameterError(key, `expected a number, found ${typeof v}`);
}

function int(file: GgufFile, key: string, min: number, max: number, fallback?: number): number {
  const v = num(file, key, fallback);
  if (!Number.isInteger(v) || v < min || v > max) throw new InvalidHyperparameterError(key, `expected an integer in [${min}, ${max}], found ${v}`);
  return v;
}

function positive(file: GgufFile, key: string, fallback?: number): number {
  const v = num(file, key, fallback);
  if (!(v > 0) || !Number.isFinite(v)) throw new InvalidHyperparameterError(key, `expected a positive number, found ${v}`);
  return v;
}

export function readHParams(file: GgufFile): HParams {
  const archValue = file.metadata.get('general.architecture');
  if (typeof archValue !== 'string') throw new InvalidHyperparameterError('general.architecture', 'missing or not a string');
  const features = ARCHITECTURES[archValue];
  if (!features) throw new UnsupportedArchitectureError(archValue, Object.keys(ARCHITECTURES));
  const a = archValue;
  const dim = int(file, `${a}.embedding_length`, 1, MAX_DIM);
  const nHeads = int(file, `${a}.attention.head_count`, 1, MAX_HEADS);
  const nKvHeads = int(file, `${a}.attention.head_count_kv`, 1, nHeads, nHeads);
  if (nHeads % nKvHeads !== 0) throw new InvalidHyperparameterError(`${a}.attention.head_count_kv`, `${nKvHeads} does not divide the ${nHeads} query heads`);
  const headDimDefault = dim % nHeads === 0 ? dim / nHeads : undefined;
  const headDim = int(file, `${a}.attention.key_length`, 1, 4096, headDimDefault);
  const valueLength = int(file, `${a}.attention.value_length`, 1, 4096, headDim);
  if (valueLength !== headDim) throw new InvalidHyperparameterError(`${a}.attention.value_length`, `differs from key_length (${headDim}); not supported`);
  const ropeDims = int(file, `${a}.rope.dimension_count`, 2, headDim, headDim);
  if (ropeDims % 2 !== 0) throw new InvalidHyperparameterError(`${a}.rope.dimension_count`, 'must be even');

  let ropeFreqScale = 1;
  const scalingType = file.metadata.get(`${a}.rope.scaling.type`);
  if (scalingType !== undefined && scalingType !== 'none') {
    if (scalingType !== 'linear') {
      throw new InvalidHyperparameterError(`${a}.rope.scaling.type`, `'${String(scalingType)}' RoPE scaling is not supported (kiln supports none, linear and Llama 3 rope factors)`);
    }
    ropeFreqScale = 1 / positive(file, `${a}.rope.scaling.factor`);
  }

  return {
    architecture: a,
    features,
    nLayers: int(file, `${a}.block_count`, 1, MAX_LAYERS),
    dim,
    nHeads,
    nKvHeads,
    headDim,
    ffnDim: int(file, `${a}.feed_forward_length`, 1, MAX_DIM * 8),
    vocabSize: int(file, `${a}.vocab_size`, 1, MAX_VOCAB, vocabFromTokens(file)),
    contextLength: int(file, `${a}.context_length`, 1, 1 << 24, 2048),
    rmsEps: positive(file, `${a}.attention.layer_norm_rms_epsilon`, 1e-5),
    ropeBase: positive(file, `${a}.rope.freq_base`, 10000),
    ropeFreqScale,
    ropeDims,
  };
}

function vocabFromTokens(file: GgufFile): number | undefined {
  const tokens = file.metadata.get('tokenizer.ggml.tokens');
  if (Array.isArray(tokens)) return tokens.length;
  const embd = file.tensors.find((t) => t.name === 'token_embd.weight');
  return embd?.dims[1];
}
