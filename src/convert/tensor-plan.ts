// Decides every tensor of the output file: its GGUF name (convert_hf_to_gguf.py's mapping for the
// llama / qwen2 / qwen3 families), its shape checked against config.json, its storage type, and
// whether its rows are permuted (the Q/K reordering llama.cpp's normal RoPE expects).
import { GgmlType, GGML_TYPES } from '../gguf/ggml-type.js';
import { HfModelFormatError } from './errors.js';
import type { GgufArchitecture, HfModelConfig } from './hf-config.js';
import { llama3RopeFactors } from './rope-factors.js';
import type { SafetensorsTensor } from './safetensors.js';

export type OutputType = 'f16' | 'q8_0' | 'q4_0';

/** general.file_type (llama_ftype) of each output type. */
export const FILE_TYPES: Record<OutputType, number> = { f16: 1, q4_0: 2, q8_0: 7 };

const MATRIX_TYPES: Record<OutputType, GgmlType> = { f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_0: GgmlType.Q4_0 };

export interface PlannedTensor {
  name: string;
  /** GGML order: dims[0] is the row width. */
  dims: number[];
  type: GgmlType;
  rows: number;
  cols: number;
  /** A source tensor and the file it lives in, or computed values. */
  source: { tensor: SafetensorsTensor; file: string } | Float32Array;
  /** Rows per head when the rows are permuted for normal RoPE; null when copied in order. */
  permuteHeadRows: number | null;
}

export interface SourceTensor {
  tensor: SafetensorsTensor;
  file: string;
}

type Shape = (c: HfModelConfig, vocabSize: number) => number[];

/** Whole-model tensors: HF name, GGUF name, HF shape (PyTorch order). */
const GLOBAL_TENSORS: Array<[string, string, Shape]> = [
  ['model.embed_tokens.weight', 'token_embd.weight', (c, v) => [v, c.dim]],
  ['model.norm.weight', 'output_norm.weight', (c) => [c.dim]],
  ['lm_head.weight', 'output.weight', (c, v) => [v, c.dim]],
];

/** Per-layer tensors (HF names after model.layers.N.) in the order they are written. */
const LAYER_TENSORS: Array<[string, string, Shape]> = [
  ['input_layernorm.weight', 'attn_norm.weight', (c) => [c.dim]],
  ['self_attn.q_proj.weight', 'attn_q.weight', (c) => [c.nHeads * c.headDim, c.dim]],
  ['self_attn.q_proj.bias', 'attn_q.bias', (c) => [c.nHeads * c.headDim]],
  ['self_attn.k_proj.weight', 'attn_k.weight', (c) => [c.nKvHeads * c.headDim, c.dim]],
  ['self_attn.k_proj.bias', 'attn_k.bias', (c) => [c.nKvHeads * c.headDim]],
  ['self_attn.v_proj.weight', 'attn_v.weight', (c) => [c.nKvHeads * c.headDim, c.dim]],
  ['self_attn.v_proj.bias', 'attn_v.bias', (c) => [c.nKvHeads * c.headDim]],
  ['self_attn.o_proj.weight', 'attn_output.weight', (c) => [c.dim, c.nHeads * c.headDim]],
  ['self_attn.o_proj.bias', 'attn_output.bias', (c) => [c.dim]],
  ['self_attn.q_norm.weight', 'attn_q_norm.weight', (c) => [c.headDim]],
  ['self_attn.k_norm.weight', 'attn_k_norm.weight', (c) => [c.headDim]],
  ['post_attention_layernorm.weight', 'ffn_norm.weight', (c) => [c.dim]],
  ['mlp.gate_proj.weight', 'ffn_gate.weight', (c) => [c.ffnDim, c.dim]],
  ['mlp.up_proj.weight', 'ffn_up.weight', (c) => [c.ffnDim, c.dim]],
  ['mlp.down_proj.weight', 'ffn_down.weight', (c) => [c.dim, c.ffnDim]],
];

const GLOBAL_MAP = new Map(GLOBAL_TENSORS.map(([hf, gguf]) => [hf, gguf]));
const LAYER_MAP = new Map(LAYER_TENSORS.map(([hf, gguf]) => [hf, gguf]));

const LLAMA_LAYER = ['attn_norm.weight', 'attn_q.weight', 'attn_k.weight', 'attn_v.weight', 'attn_output.weight', 'ffn_norm.weight', 'ffn_gate.weight', 'ffn_up.weight', 'ffn_down.weight'];

/** The layer tensors every model of the architecture has; the others are optional. */
const REQUIRED_LAYER_TENSORS: Record<GgufArchitecture, string[]> = {
  llama: LLAMA_LAYER,
  qwen2: [...LLAMA_LAYER, 'attn_q.bias', 'attn_k.bias', 'attn_v.bias'],
  qwen3: [...LLAMA_LAYER, 'attn_q_norm.weight', 'attn_k_norm.weight'],
};

/** Buffers and caches some checkpoints carry that no runtime reads. */
const SKIPPED_SUFFIXES = ['.attention.masked_bias', '.attention.bias', '.rotary_emb.inv_freq'];

/** The GGUF name of an HF tensor, null for one that is dropped; throws for one it cannot place. */
export function ggufTensorName(hfName: string, nLayers: number, where: string): string | null {
  if (SKIPPED_SUFFIXES.some((s) => hfName.endsWith(s))) return null;
  const global = GLOBAL_MAP.get(hfName);
  if (global !== undefined) return global;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  const mapped = m ? LAYER_MAP.get(m[2]!) : undefined;
  if (!m || mapped === undefined) {
    throw new HfModelFormatError(where, `has the tensor ${JSON.stringify(hfName.slice(0, 96))}, which has no place in a llama / qwen2 / qwen3 GGUF (is the model another architecture, or a quantized or adapter checkpoint?)`);
  }
  const layer = Number(m[1]);
  if (layer >= nLayers) throw new HfModelFormatError(where, `has the tensor ${JSON.stringify(hfName.slice(0, 96))} for layer ${layer}, but config.json has ${nLayers} layers`);
  return `blk.${layer}.${mapped}`;
}

/**
 * The tensors of the output file in write order, from the model's tensors by HF name.
 * `vocabSize` is the number of tokens the tokenizer metadata holds.
 */
export function planTensors(config: HfModelConfig, sources: Map<string, SourceTensor>, vocabSize: number, outType: OutputType, dir: string): PlannedTensor[] {
  const byGguf = new Map<string, SourceTensor>();
  for (const [hfName, src] of sources) {
    const name = ggufTensorName(hfName, config.nLayers, src.file);
    if (name === null) continue;
    // Tied embeddings: the output matrix is the embedding table, so a stored copy is left out.
    if (name === 'output.weight' && config.tieWordEmbeddings) continue;
    byGguf.set(name, src);
  }
  const hasOutput = byGguf.has('output.weight');

  const plan: PlannedTensor[] = [];
  for (const { hf, name, shape, required } of expectedTensors(config, vocabSize)) {
    const src = byGguf.get(name);
    if (src === undefined) {
      if (required) throw new HfModelFormatError(dir, `has no tensor for ${name} (${hf}), which a ${config.hfArchitecture} model needs; the download is incomplete or the model is another architecture`);
      continue;
    }
    const { tensor } = src;
    if (tensor.shape.length !== shape.length || tensor.shape.some((d, i) => d !== shape[i])) {
      throw new HfModelFormatError(src.file, `tensor ${tensor.name} has shape [${tensor.shape.join(', ')}], but config.json (and the tokenizer's ${vocabSize} tokens) call for [${shape.join(', ')}]`);
    }
    if (tensor.dtype !== 'F32' && tensor.dtype !== 'F16' && tensor.dtype !== 'BF16') {
      throw new HfModelFormatError(src.file, `tensor ${tensor.name} is stored as ${tensor.dtype}; kiln convert reads F32, F16 and BF16 weights (quantized checkpoints such as GPTQ or AWQ cannot be converted)`);
    }
    const [rows, cols = 1] = shape as [number, number?];
    // llama.cpp applies normal (GPT-J) RoPE to llama models: HF's rotate-half layout of Q and K
    // (weights and biases) is permuted into adjacent pairs.
    const permute = config.architecture === 'llama' && /^blk\.\d+\.attn_[qk]\./.test(name);
    plan.push({
      name,
      dims: shape.length === 2 ? [cols, rows] : [rows],
      type: storageType(name, shape, outType, hasOutput),
      rows,
      cols,
      source: src,
      permuteHeadRows: permute ? config.headDim : null,
    });
  }

  const ropeFactors = llama3RopeFactors(config);
  if (ropeFactors !== null) {
    plan.splice(1, 0, { name: 'rope_freqs.weight', dims: [ropeFactors.length], type: GgmlType.F32, rows: ropeFactors.length, cols: 1, source: ropeFactors, permuteHeadRows: null });
  }
  return plan;
}

/** Every tensor the output file may hold, in write order, with its HF name and shape. */
function expectedTensors(c: HfModelConfig, vocabSize: number): Array<{ hf: string; name: string; shape: number[]; required: boolean }> {
  const entry = ([hf, name, shape]: [string, string, Shape], required: boolean) => ({ hf, name, shape: shape(c, vocabSize), required });
  const required = new Set(REQUIRED_LAYER_TENSORS[c.architecture]);
  const out = [entry(GLOBAL_TENSORS[0]!, true)];
  for (let l = 0; l < c.nLayers; l++) {
    for (const [hf, name, shape] of LAYER_TENSORS) out.push(entry([`model.layers.${l}.${hf}`, `blk.${l}.${name}`, shape], required.has(name)));
  }
  out.push(entry(GLOBAL_TENSORS[1]!, true), entry(GLOBAL_TENSORS[2]!, false));
  return out;
}

/**
 * Norms and 1-D tensors stay F32, matrices take the output type (F16 when their rows do not
 * divide into its blocks, as the script falls back). With q4_0 the output matrix (or the tied
 * embeddings serving as it) gets Q6_K, as llama.cpp's quantize does for its Q4_0 files.
 */
export function storageType(name: string, shape: readonly number[], outType: OutputType, hasOutput: boolean): GgmlType {
  if (shape.length < 2 || name.endsWith('_norm.weight') || !name.endsWith('.weight')) return GgmlType.F32;
  const width = shape[shape.length - 1]!;
  let type = MATRIX_TYPES[outType];
  const isOutput = name === 'output.weight' || (!hasOutput && name === 'token_embd.weight');
  if (isOutput && outType === 'q4_0') type = width % GGML_TYPES[GgmlType.Q6_K].blockSize === 0 ? GgmlType.Q6_K : GgmlType.Q8_0;
  return width % GGML_TYPES[type].blockSize === 0 ? type : GgmlType.F16;
}
