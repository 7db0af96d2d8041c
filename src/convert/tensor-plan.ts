// Decides every tensor of the output file: its GGUF name (convert_hf_to_gguf.py's mapping for the
// llama / qwen2 / qwen3 families), its shape checked against config.json, its storage type, and
// whether its rows are permuted (the Q/K reordering llama.cpp's normal RoPE expects).
import { GgmlType, GGML_TYPES } from '../gguf/ggml-type.js';
import { HfModelFormatError } from './errors.js';
import type { HfModelConfig } from './hf-config.js';
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

const GLOBAL_NAMES: Record<string, string> = {
  'model.embed_tokens.weight': 'token_embd.weight',
  'model.norm.weight': 'output_norm.weight',
  'lm_head.weight': 'output.weight',
};

/** Per-layer HF names (after model.layers.N.) in the order their GGUF tensors are written. */
const LAYER_NAMES: Array<[string, string]> = [
  ['input_layernorm.weight', 'attn_norm.weight'],
  ['self_attn.q_proj.weight', 'attn_q.weight'],
  ['self_attn.q_proj.bias', 'attn_q.bias'],
  ['self_attn.k_proj.weight', 'attn_k.weight'],
  ['self_attn.k_proj.bias', 'attn_k.bias'],
  ['self_attn.v_proj.weight', 'attn_v.weight'],
  ['self_attn.v_proj.bias', 'attn_v.bias'],
  ['self_attn.o_proj.weight', 'attn_output.weight'],
  ['self_attn.o_proj.bias', 'attn_output.bias'],
  ['self_attn.q_norm.weight', 'attn_q_norm.weight'],
  ['self_attn.k_norm.weight', 'attn_k_norm.weight'],
  ['post_attention_layernorm.weight', 'ffn_norm.weight'],
  ['mlp.gate_proj.weight', 'ffn_gate.weight'],
  ['mlp.up_proj.weight', 'ffn_up.weight'],
  ['mlp.down_proj.weight', 'ffn_down.weight'],
];
const LAYER_MAP = new Map(LAYER_NAMES);

/** Buffers and caches some checkpoints carry that no runtime reads. */
const SKIPPED_SUFFIXES = ['.attention.masked_bias', '.attention.bias', '.rotary_emb.inv_freq'];

/** The GGUF name of an HF tensor, null for one that is dropped; throws for one it cannot place. */
export function ggufTensorName(hfName: string, nLayers: number, where: string): string | null {
  if (SKIPPED_SUFFIXES.some((s) => hfName.endsWith(s))) return null;
  const global = GLOBAL_NAMES[hfName];
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
  const { dim, ffnDim, nHeads, nKvHeads, headDim, nLayers } = config;
  const byGguf = new Map<string, SourceTensor>();
  for (const [hfName, src] of sources) {
    const name = ggufTensorName(hfName, nLayers, src.file);
    if (name === null) continue;
    // Tied embeddings: the output matrix is the embedding table, so a stored copy is left out.
    if (name === 'output.weight' && config.tieWordEmbeddings) continue;
    byGguf.set(name, src);
  }

  const shapes = new Map<string, number[]>([
    ['token_embd.weight', [vocabSize, dim]],
    ['output_norm.weight', [dim]],
    ['output.weight', [vocabSize, dim]],
  ]);
  const layerShapes: Record<string, number[]> = {
    'attn_norm.weight': [dim],
    'attn_q.weight': [nHeads * headDim, dim],
    'attn_q.bias': [nHeads * headDim],
    'attn_k.weight': [nKvHeads * headDim, dim],
    'attn_k.bias': [nKvHeads * headDim],
    'attn_v.weight': [nKvHeads * headDim, dim],
    'attn_v.bias': [nKvHeads * headDim],
    'attn_output.weight': [dim, nHeads * headDim],
    'attn_output.bias': [dim],
    'attn_q_norm.weight': [headDim],
    'attn_k_norm.weight': [headDim],
    'ffn_norm.weight': [dim],
    'ffn_gate.weight': [ffnDim, dim],
    'ffn_up.weight': [ffnDim, dim],
    'ffn_down.weight': [dim, ffnDim],
  };
  const required = ['attn_norm.weight', 'attn_q.weight', 'attn_k.weight', 'attn_v.weight', 'attn_output.weight', 'ffn_norm.weight', 'ffn_gate.weight', 'ffn_up.weight', 'ffn_down.weight'];
  if (config.architecture === 'qwen2') required.push('attn_q.bias', 'attn_k.bias', 'attn_v.bias');
  if (config.architecture === 'qwen3') required.push('attn_q_norm.weight', 'attn_k_norm.weight');

  const order: string[] = ['token_embd.weight'];
  for (let l = 0; l < nLayers; l++) {
    for (const [, name] of LAYER_NAMES) {
      shapes.set(`blk.${l}.${name}`, layerShapes[name]!);
      order.push(`blk.${l}.${name}`);
    }
  }
  order.push('output_norm.weight', 'output.weight');
  const requiredNames = new Set(['token_embd.weight', 'output_norm.weight', ...Array.from({ length: nLayers }, (_, l) => required.map((n) => `blk.${l}.${n}`)).flat()]);

  const hasOutput = byGguf.has('output.weight');
  const plan: PlannedTensor[] = [];
  for (const name of order) {
    const src = byGguf.get(name);
    if (src === undefined) {
      if (requiredNames.has(name)) {
        throw new HfModelFormatError(dir, `has no tensor for ${name} (${hfNameOf(name)}), which a ${config.hfArchitecture} model needs; the download is incomplete or the model is another architecture`);
      }
      continue;
    }
    const expected = shapes.get(name)!;
    const { tensor } = src;
    if (tensor.shape.length !== expected.length || tensor.shape.some((d, i) => d !== expected[i])) {
      throw new HfModelFormatError(src.file, `tensor ${tensor.name} has shape [${tensor.shape.join(', ')}], but config.json (and the tokenizer's ${vocabSize} tokens) call for [${expected.join(', ')}]`);
    }
    if (tensor.dtype !== 'F32' && tensor.dtype !== 'F16' && tensor.dtype !== 'BF16') {
      throw new HfModelFormatError(src.file, `tensor ${tensor.name} is stored as ${tensor.dtype}; kiln convert reads F32, F16 and BF16 weights (quantized checkpoints such as GPTQ or AWQ cannot be converted)`);
    }
    const rows = expected[0]!;
    const cols = expected.length === 2 ? expected[1]! : 1;
    const kind = /^blk\.\d+\.(.+)$/.exec(name)?.[1] ?? name;
    // llama.cpp applies normal (GPT-J) RoPE to llama models: HF's rotate-half layout is permuted into adjacent pairs.
    const permute = config.architecture === 'llama' && (kind.startsWith('attn_q.') || kind.startsWith('attn_k.')) ? headDim : null;
    plan.push({
      name,
      dims: expected.length === 2 ? [cols, rows] : [rows],
      type: storageType(name, expected, outType, hasOutput),
      rows,
      cols,
      source: src,
      permuteHeadRows: permute,
    });
  }

  const ropeFactors = llama3RopeFactors(config);
  if (ropeFactors !== null) {
    plan.splice(1, 0, { name: 'rope_freqs.weight', dims: [ropeFactors.length], type: GgmlType.F32, rows: ropeFactors.length, cols: 1, source: ropeFactors, permuteHeadRows: null });
  }
  return plan;
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

function hfNameOf(gguf: string): string {
  for (const [hf, g] of Object.entries(GLOBAL_NAMES)) if (g === gguf) return hf;
  const m = /^blk\.(\d+)\.(.+)$/.exec(gguf)!;
  for (const [hf, g] of LAYER_NAMES) if (g === m[2]) return `model.layers.${m[1]}.${hf}`;
  return gguf;
}

