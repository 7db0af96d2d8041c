// Reads a model's config.json into the hyperparameters a conversion needs, the way
// convert_hf_to_gguf.py reads them (the same keys, fallbacks and RoPE scaling rules).
import { HfModelFormatError, HfUnsupportedArchitectureError } from './errors.js';
import { isRecord } from './read-file.js';
import { MAX_DIM, MAX_HEADS, MAX_LAYERS, MAX_VOCAB } from './limits.js';

export type GgufArchitecture = 'llama' | 'qwen2' | 'qwen3';

/** config.json `architectures[0]` -> the GGUF architecture it converts to. */
export const HF_ARCHITECTURES: Record<string, GgufArchitecture> = {
  LlamaForCausalLM: 'llama',
  LLaMAForCausalLM: 'llama',
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

export type RopeScaling =
  | { type: 'linear'; factor: number }
  | { type: 'yarn'; factor: number; originalContextLength: number; extFactor?: number; attnFactor?: number; betaFast?: number; betaSlow?: number }
  /** Llama 3.1+: written as the rope_freqs.weight tensor, not as metadata. */
  | { type: 'llama3'; factor: number; lowFreqFactor: number; highFreqFactor: number; originalContextLength: number };

export interface HfModelConfig {
  hfArchitecture: string;
  architecture: GgufArchitecture;
  nLayers: number;
  dim: number;
  ffnDim: number;
  nHeads: number;
  nKvHeads: number;
  /** config.json's head_dim, when it has one (Qwen3; Mistral Nemo). */
  explicitHeadDim: number | null;
  headDim: number;
  /** config.json's vocab_size, or null when it has none. */
  vocabSize: number | null;
  contextLength: number | null;
  rmsEps: number | null;
  ropeTheta: number | null;
  ropeScaling: RopeScaling | null;
  tieWordEmbeddings: boolean;
}

export function readHfConfig(json: Record<string, unknown>, path: string): HfModelConfig {
  const fail = (detail: string): never => {
    throw new HfModelFormatError(path, detail);
  };
  const archs = json['architectures'];
  const hfArchitecture = Array.isArray(archs) && typeof archs[0] === 'string' ? archs[0] : null;
  if (hfArchitecture === null) fail('has no "architectures" list naming the model class (e.g. "LlamaForCausalLM")');
  const architecture = HF_ARCHITECTURES[hfArchitecture!];
  if (architecture === undefined) throw new HfUnsupportedArchitectureError(hfArchitecture!, Object.keys(HF_ARCHITECTURES));

  const first = (keys: string[]): unknown => {
    for (const k of keys) if (json[k] !== undefined && json[k] !== null) return json[k];
    return undefined;
  };
  const int = (keys: string[], min: number, max: number, fallback?: number | null): number => {
    const v = first(keys);
    if (v === undefined) {
      if (fallback !== undefined && fallback !== null) return fallback;
      return fail(`has no ${keys[0]}, which a ${hfArchitecture} model needs`);
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) fail(`${keys[0]} should be an integer in [${min}, ${max}], found ${JSON.stringify(v)}`);
    return v as number;
  };
  const optInt = (keys: string[], min: number, max: number): number | null => (first(keys) === undefined ? null : int(keys, min, max));
  const optPositive = (key: string, source: Record<string, unknown> = json): number | null => {
    const v = source[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)) fail(`${key} should be a positive number, found ${JSON.stringify(v)}`);
    return v as number;
  };

  const nLayers = int(['num_hidden_layers', 'n_layers', 'n_layer', 'num_layers'], 1, MAX_LAYERS);
  const dim = int(['hidden_size', 'n_embd', 'dim'], 1, MAX_DIM);
  const ffnDim = int(['intermediate_size', 'n_inner', 'hidden_dim'], 1, MAX_DIM);
  const nHeads = int(['num_attention_heads', 'n_head', 'n_heads'], 1, MAX_HEADS);
  const nKvHeads = int(['num_key_value_heads', 'n_kv_heads'], 1, nHeads, nHeads);
  if (nHeads % nKvHeads !== 0) fail(`num_key_value_heads ${nKvHeads} does not divide num_attention_heads ${nHeads}`);
  const explicitHeadDim = optInt(['head_dim'], 2, MAX_DIM);
  if (explicitHeadDim === null && dim % nHeads !== 0) fail(`hidden_size ${dim} is not a multiple of num_attention_heads ${nHeads} and there is no head_dim`);
  const headDim = explicitHeadDim ?? dim / nHeads;
  if (headDim % 2 !== 0) fail(`the head size ${headDim} is odd; RoPE rotates pairs`);

  const ropeParams = isRecord(json['rope_parameters']) ? json['rope_parameters'] : isRecord(json['rope_scaling']) ? json['rope_scaling'] : {};
  const ropeTheta = optPositive('rope_theta', ropeParams) ?? optPositive('rope_theta');

  const tie = json['tie_word_embeddings'];
  return {
    hfArchitecture: hfArchitecture!,
    architecture,
    nLayers,
    dim,
    ffnDim,
    nHeads,
    nKvHeads,
    explicitHeadDim,
    headDim,
    vocabSize: optInt(['vocab_size'], 1, MAX_VOCAB),
    contextLength: optInt(['max_position_embeddings', 'n_ctx', 'n_positions', 'max_length', 'max_sequence_length', 'model_max_length'], 1, 2 ** 31 - 1),
    rmsEps: optPositive('rms_norm_eps') ?? optPositive('norm_eps'),
    ropeTheta,
    ropeScaling: readRopeScaling(ropeParams, json, fail),
    // The default of LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config.
    tieWordEmbeddings: typeof tie === 'boolean' ? tie : false,
  };
}

function readRopeScaling(p: Record<string, unknown>, json: Record<string, unknown>, fail: (detail: string) => never): RopeScaling | null {
  const type = p['rope_type'] ?? p['type'];
  if (type === undefined || type === null || type === 'default') return null;
  const num = (key: string, fallback?: number): number => {
    const v = p[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(`rope_scaling.${key} should be a number, found ${JSON.stringify(p[key])}`);
    return v;
  };
  const opt = (key: string): number | undefined => (p[key] === undefined || p[key] === null ? undefined : num(key));
  switch (typeof type === 'string' ? type.toLowerCase() : type) {
    case 'linear':
      // Without a factor the script writes no scaling at all.
      return p['factor'] === undefined || p['factor'] === null ? null : { type: 'linear', factor: num('factor') };
    case 'yarn': {
      if (p['factor'] === undefined || p['factor'] === null) return null;
      const scaling: RopeScaling = { type: 'yarn', factor: num('factor'), originalContextLength: num('original_max_position_embeddings') };
      const ext = opt('extrapolation_factor');
      const attn = opt('attention_factor') ?? opt('attn_factor');
      const fast = opt('beta_fast');
      const slow = opt('beta_slow');
      if (ext !== undefined) scaling.extFactor = ext;
      if (attn !== undefined) scaling.attnFactor = attn;
      if (fast !== undefined) scaling.betaFast = fast;
      if (slow !== undefined) scaling.betaSlow = slow;
      return scaling;
    }
    case 'llama3':
      return {
        type: 'llama3',
        factor: num('factor', 8),
        lowFreqFactor: num('low_freq_factor', 1),
        highFreqFactor: num('high_freq_factor', 4),
        // Where transformers reads it; the script reads the top level, and real configs agree.
        originalContextLength: num('original_max_position_embeddings', typeof json['original_max_position_embeddings'] === 'number' ? json['original_max_position_embeddings'] : 8192),
      };
    default:
      return fail(`rope scaling type ${JSON.stringify(type)} cannot be converted for kiln and llama.cpp (supported: linear, yarn, llama3)`);
  }
}
