// `npm run bench -- models [--out DIR] [--model NAME,...] [--type T,...] [--force]`: writes
// synthetic GGUF files of real model shapes (TinyLlama-1.1B, Llama-3.2-1B, Qwen2.5-0.5B, Qwen3-0.6B) with deterministic
// random weights and a valid synthetic tokenizer, for the kernel and end-to-end benches. Speed does
// not depend on the weights' values, so these stand in for the real downloads, and kiln and
// llama.cpp can both load them.
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GgmlType, GGML_TYPES } from '../src/gguf/ggml-type.js';
import { GgufValueType } from '../src/gguf/types.js';
import type { GgufWriteSpec } from '../src/gguf/writer.js';
import { native } from '../src/native/binding.js';
import { TokenType } from '../src/tokenizer/token-type.js';
import { type StreamedTensor, tensorBytes, writeGgufStreaming } from './gguf-stream-writer.js';

export interface ModelShape {
  /** File name stem and --model value. */
  name: string;
  /** What it stands in for. */
  title: string;
  architecture: 'llama' | 'qwen2' | 'qwen3';
  dim: number;
  nLayers: number;
  ffnDim: number;
  nHeads: number;
  nKvHeads: number;
  /** Per-head width where it is not dim / nHeads (Qwen3: 128 for every size). */
  headDim?: number;
  vocab: number;
  contextLength: number;
  ropeBase: number;
  rmsEps: number;
  /** SentencePiece (llama), or byte-level BPE (gpt2) with Qwen2's or Llama 3's pre-tokenizer and special tokens. */
  tokenizer: 'spm' | 'bpe' | 'llama-bpe';
  /** The output projection is the token embedding (no output.weight). */
  tiedEmbeddings: boolean;
  qkvBias: boolean;
  /** RMSNorm of each query and key head before RoPE (Qwen3). */
  qkNorm?: boolean;
}

export const SHAPES: Record<string, ModelShape> = {
  tinyllama: {
    name: 'tinyllama-1.1b', title: 'TinyLlama-1.1B', architecture: 'llama', dim: 2048, nLayers: 22, ffnDim: 5632,
    nHeads: 32, nKvHeads: 4, vocab: 32000, contextLength: 2048, ropeBase: 10000, rmsEps: 1e-5,
    tokenizer: 'spm', tiedEmbeddings: false, qkvBias: false,
  },
  llama3: {
    name: 'llama-3.2-1b', title: 'Llama-3.2-1B', architecture: 'llama', dim: 2048, nLayers: 16, ffnDim: 8192,
    nHeads: 32, nKvHeads: 8, vocab: 128256, contextLength: 131072, ropeBase: 500000, rmsEps: 1e-5,
    tokenizer: 'llama-bpe', tiedEmbeddings: true, qkvBias: false,
  },
  qwen2: {
    name: 'qwen2.5-0.5b', title: 'Qwen2.5-0.5B', architecture: 'qwen2', dim: 896, nLayers: 24, ffnDim: 4864,
    nHeads: 14, nKvHeads: 2, vocab: 151936, contextLength: 32768, ropeBase: 1000000, rmsEps: 1e-6,
    tokenizer: 'bpe', tiedEmbeddings: true, qkvBias: true,
  },
  qwen3: {
    name: 'qwen3-0.6b', title: 'Qwen3-0.6B', architecture: 'qwen3', dim: 1024, nLayers: 28, ffnDim: 3072,
    nHeads: 16, nKvHeads: 8, headDim: 128, vocab: 151936, contextLength: 40960, ropeBase: 1000000, rmsEps: 1e-6,
    tokenizer: 'bpe', tiedEmbeddings: true, qkvBias: false, qkNorm: true,
  },
};

/** What `bench models` writes without --model / --type: the standing rows' shapes and types (about 10 GB; every shape in every type is about 27 GB). */
const DEFAULT_SHAPES = ['tinyllama', 'qwen2'];
const DEFAULT_TYPES = ['f16', 'q8_0', 'q4_0', 'q4_k', 'q4_k_m', 'q5_k', 'q6_k'];

function headDimOf(shape: ModelShape): number {
  return shape.headDim ?? shape.dim / shape.nHeads;
}

/**
 * Weight types of the bench files, with llama.cpp's `general.file_type` for each. A type with a
 * recipe mixes types by tensor as llama.cpp's quantizer does for that file type (q4_k_m, the most
 * common download); the others are one type throughout (llama-quantize --pure).
 */
export const BENCH_TYPES: Record<string, { type: GgmlType; fileType: number; recipe?: (tensor: TensorRole) => GgmlType }> = {
  f16: { type: GgmlType.F16, fileType: 1 },
  bf16: { type: GgmlType.BF16, fileType: 32 },
  q8_0: { type: GgmlType.Q8_0, fileType: 7 },
  q4_0: { type: GgmlType.Q4_0, fileType: 2 },
  q4_k: { type: GgmlType.Q4_K, fileType: 14 },
  q4_k_m: { type: GgmlType.Q4_K, fileType: 15, recipe: q4KMediumType },
  q5_k: { type: GgmlType.Q5_K, fileType: 16 },
  q6_k: { type: GgmlType.Q6_K, fileType: 18 },
};

/** Where a matrix sits in the model, for a mixing recipe. */
export interface TensorRole {
  /** The name without its layer prefix: token_embd, output, attn_v, ffn_down, ... */
  kind: string;
  /** Its layer (-1 outside the layers) and the model's layer count. */
  layer: number;
  nLayers: number;
  /** Whether the output matrix is the token embeddings (then token_embd is quantized as output). */
  tied: boolean;
}

/**
 * llama.cpp's Q4_K_M for llama-family models (llama_tensor_get_type in src/llama-quant.cpp): Q4_K,
 * except Q6_K for the output matrix (and the token embeddings where they are that matrix) and for
 * attn_v and ffn_down in the layers its use_more_bits picks: the first and last eighth, and every
 * third layer between.
 */
function q4KMediumType(t: TensorRole): GgmlType {
  const eighth = Math.trunc(t.nLayers / 8);
  const moreBits = t.layer < eighth || t.layer >= Math.trunc((7 * t.nLayers) / 8) || (t.layer - eighth) % 3 === 2;
  if (t.kind === 'output' || (t.kind === 'token_embd' && t.tied)) return GgmlType.Q6_K;
  if ((t.kind === 'attn_v' || t.kind === 'ffn_down') && moreBits) return GgmlType.Q6_K;
  return GgmlType.Q4_K;
}

export const DEFAULT_MODEL_DIR = join(homedir(), '.cache', 'kiln-bench');
const SEED = 0x6b696c6e; // 'kiln'
// Weights uniform in [-W, W]: about the spread of trained projections, so activations stay finite.
const WEIGHT_RANGE = 0.04;
// Floats generated and quantized per chunk (16 MB of F32).
const CHUNK_VALUES = 1 << 22;

export function benchModelFile(shape: ModelShape, typeName: string, dir = DEFAULT_MODEL_DIR): string {
  return join(dir, `${shape.name}-${typeName}.gguf`);
}

/** The shape a bench file name stands for (`tinyllama-1.1b-q4_0.gguf`), or null. */
export function shapeOfFile(path: string): ModelShape | null {
  const base = path.split('/').pop() ?? '';
  return Object.values(SHAPES).find((s) => base.startsWith(`${s.name}-`)) ?? null;
}

/** The model's matrix type for a row width: the file's type, or Q8_0 when the width is not a whole number of its blocks (Qwen2.5-0.5B's 896 in K-quants, as llama.cpp's quantizer also falls back). */
function matrixType(type: GgmlType, cols: number): GgmlType {
  if (cols % GGML_TYPES[type].blockSize === 0) return type;
  return cols % GGML_TYPES[GgmlType.Q8_0].blockSize === 0 ? GgmlType.Q8_0 : GgmlType.F16;
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Fills `out` with uniform values in [-range, range) from a mulberry32 stream; returns the state. */
function fillUniform(out: Float32Array, state: number, range: number): number {
  for (let i = 0; i < out.length; i++) {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1) * range;
  }
  return state;
}

/** A matrix (rows, cols) of random weights, quantized chunk by chunk with the native quantizer. */
function randomMatrix(name: string, cols: number, rows: number, type: GgmlType): StreamedTensor {
  return {
    name,
    dims: [cols, rows],
    type,
    *chunks() {
      const addon = native();
      const rowsPerChunk = Math.max(1, Math.floor(CHUNK_VALUES / cols));
      const f32 = new Float32Array(rowsPerChunk * cols);
      const bytes = new Uint8Array(tensorBytes(type, [cols, rowsPerChunk]));
      let state = (SEED ^ hashString(name)) | 0;
      for (let r = 0; r < rows; r += rowsPerChunk) {
        const n = Math.min(rowsPerChunk, rows - r);
        const src = f32.subarray(0, n * cols);
        state = fillUniform(src, state, WEIGHT_RANGE);
        const dst = bytes.subarray(0, tensorBytes(type, [cols, n]));
        addon.quantize(type, src, dst);
        yield dst;
      }
    },
  };
}

/** An F32 vector: norm weights near 1, biases near 0. */
function vector(name: string, n: number, center: number, range: number): StreamedTensor {
  return {
    name,
    dims: [n],
    type: GgmlType.F32,
    *chunks() {
      const v = new Float32Array(n);
      fillUniform(v, (SEED ^ hashString(name)) | 0, range);
      for (let i = 0; i < n; i++) v[i]! += center;
      yield new Uint8Array(v.buffer);
    },
  };
}

function tensorsOf(shape: ModelShape, bench: (typeof BENCH_TYPES)[string]): StreamedTensor[] {
  const { dim, ffnDim, vocab } = shape;
  const headDim = headDimOf(shape);
  const qDim = shape.nHeads * headDim;
  const kvDim = shape.nKvHeads * headDim;
  const matrix = (name: string, cols: number, rows: number) => {
    const parts = name.split('.');
    const layer = parts[0] === 'blk' ? Number(parts[1]) : -1;
    const kind = layer >= 0 ? parts[2]! : parts[0]!;
    const type = bench.recipe ? bench.recipe({ kind, layer, nLayers: shape.nLayers, tied: shape.tiedEmbeddings }) : bench.type;
    return randomMatrix(name, cols, rows, matrixType(type, cols));
  };
  const out: StreamedTensor[] = [matrix('token_embd.weight', dim, vocab)];
  for (let l = 0; l < shape.nLayers; l++) {
    const p = `blk.${l}`;
    out.push(vector(`${p}.attn_norm.weight`, dim, 1, 0.1));
    out.push(matrix(`${p}.attn_q.weight`, dim, qDim));
    out.push(matrix(`${p}.attn_k.weight`, dim, kvDim));
    out.push(matrix(`${p}.attn_v.weight`, dim, kvDim));
    if (shape.qkvBias) {
      out.push(vector(`${p}.attn_q.bias`, qDim, 0, 0.1));
      out.push(vector(`${p}.attn_k.bias`, kvDim, 0, 0.1));
      out.push(vector(`${p}.attn_v.bias`, kvDim, 0, 0.1));
    }
    if (shape.qkNorm) {
      out.push(vector(`${p}.attn_q_norm.weight`, headDim, 1, 0.1));
      out.push(vector(`${p}.attn_k_norm.weight`, headDim, 1, 0.1));
    }
    out.push(matrix(`${p}.attn_output.weight`, qDim, dim));
    out.push(vector(`${p}.ffn_norm.weight`, dim, 1, 0.1));
    out.push(matrix(`${p}.ffn_gate.weight`, dim, ffnDim));
    out.push(matrix(`${p}.ffn_up.weight`, dim, ffnDim));
    out.push(matrix(`${p}.ffn_down.weight`, ffnDim, dim));
  }
  out.push(vector('output_norm.weight', dim, 1, 0.1));
  if (!shape.tiedEmbeddings) out.push(matrix('output.weight', dim, vocab));
  return out;
}

type Metadata = NonNullable<GgufWriteSpec['metadata']>;

/** Bijective base-26: 1 -> a, 26 -> z, 27 -> aa. */
function letters(n: number): string {
  let s = '';
  for (; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(97 + ((n - 1) % 26)) + s;
  return s;
}

/** A Llama-2-style SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte pieces, then made-up pieces. */
function spmVocabulary(size: number): Metadata {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TokenType.BYTE);
  }
  for (let k = 0; tokens.length < size; k++) {
    tokens.push((k % 2 === 0 ? '\u2581' : '') + letters((k >> 1) + 1));
    types.push(TokenType.NORMAL);
  }
  const scores = Float32Array.from(tokens, (_, i) => (i < 259 ? 0 : -(i - 259)));
  return [
    { key: 'tokenizer.ggml.model', type: GgufValueType.STRING, value: 'llama' },
    { key: 'tokenizer.ggml.tokens', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: tokens },
    { key: 'tokenizer.ggml.scores', type: GgufValueType.ARRAY, elementType: GgufValueType.FLOAT32, value: scores },
    { key: 'tokenizer.ggml.token_type', type: GgufValueType.ARRAY, elementType: GgufValueType.INT32, value: Int32Array.from(types) },
    { key: 'tokenizer.ggml.bos_token_id', type: GgufValueType.UINT32, value: 1 },
    { key: 'tokenizer.ggml.eos_token_id', type: GgufValueType.UINT32, value: 2 },
    { key: 'tokenizer.ggml.unknown_token_id', type: GgufValueType.UINT32, value: 0 },
    { key: 'tokenizer.ggml.add_bos_token', type: GgufValueType.BOOL, value: true },
  ];
}

/** GPT-2's byte-to-character map: printable bytes stand for themselves, the rest move past U+0100. */
function byteLevelAlphabet(): string[] {
  const out: string[] = new Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out[b] = String.fromCodePoint(printable ? b : next++);
  }
  return out;
}

/**
 * A byte-level BPE vocabulary: the 256 byte symbols, tokens made by random merges (each merge's
 * parts are earlier tokens, so the merge list is valid), then control tokens. Qwen2-style: Qwen's
 * control tokens, then padding entries up to the embedding's row count, as Qwen2.5's GGUF files
 * have. Llama 3-style: 128000 regular tokens, then 256 control tokens (<|begin_of_text|> first).
 */
function bpeVocabulary(size: number, llama3: boolean): Metadata {
  // Qwen2.5: 151643 regular tokens, then 22 added tokens, then padding.
  const regular = llama3 ? 128000 : size - 293;
  const specials = llama3
    ? ['<|begin_of_text|>', '<|end_of_text|>', ...Array.from({ length: size - regular - 2 }, (_, i) => `<|reserved_special_token_${i}|>`)]
    : ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const tokens = byteLevelAlphabet();
  const seen = new Set(tokens);
  const merges: string[] = [];
  let state = SEED | 0;
  const rand = (n: number) => {
    state = (Math.imul(state, 1103515245) + 12345) | 0;
    return ((state >>> 8) % n) >>> 0;
  };
  while (tokens.length < regular) {
    const a = tokens[rand(tokens.length)]!;
    const b = rand(4) === 0 ? tokens[rand(tokens.length)]! : tokens[rand(256)]!;
    const merged = a + b;
    if (merged.length > 12 || seen.has(merged)) continue;
    seen.add(merged);
    tokens.push(merged);
    merges.push(`${a} ${b}`);
  }
  const types: number[] = tokens.map(() => TokenType.NORMAL);
  for (const s of specials) { tokens.push(s); types.push(TokenType.CONTROL); }
  while (tokens.length < size) { tokens.push(`[PAD${tokens.length}]`); types.push(TokenType.UNUSED); }
  return [
    { key: 'tokenizer.ggml.model', type: GgufValueType.STRING, value: 'gpt2' },
    { key: 'tokenizer.ggml.pre', type: GgufValueType.STRING, value: llama3 ? 'llama-bpe' : 'qwen2' },
    { key: 'tokenizer.ggml.tokens', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: tokens },
    { key: 'tokenizer.ggml.token_type', type: GgufValueType.ARRAY, elementType: GgufValueType.INT32, value: Int32Array.from(types) },
    { key: 'tokenizer.ggml.merges', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: merges },
    { key: 'tokenizer.ggml.bos_token_id', type: GgufValueType.UINT32, value: regular },
    { key: 'tokenizer.ggml.eos_token_id', type: GgufValueType.UINT32, value: llama3 ? regular + 1 : regular },
    ...(llama3 ? [] : [{ key: 'tokenizer.ggml.padding_token_id', type: GgufValueType.UINT32, value: regular }] satisfies Metadata),
    { key: 'tokenizer.ggml.add_bos_token', type: GgufValueType.BOOL, value: llama3 },
  ];
}

function metadataOf(shape: ModelShape, typeName: string): Metadata {
  const a = shape.architecture;
  const headDim = headDimOf(shape);
  return [
    { key: 'general.architecture', type: GgufValueType.STRING, value: a },
    { key: 'general.name', type: GgufValueType.STRING, value: `${shape.title} (synthetic, kiln bench)` },
    { key: 'general.file_type', type: GgufValueType.UINT32, value: BENCH_TYPES[typeName]!.fileType },
    { key: `${a}.context_length`, type: GgufValueType.UINT32, value: shape.contextLength },
    { key: `${a}.embedding_length`, type: GgufValueType.UINT32, value: shape.dim },
    { key: `${a}.block_count`, type: GgufValueType.UINT32, value: shape.nLayers },
    { key: `${a}.feed_forward_length`, type: GgufValueType.UINT32, value: shape.ffnDim },
    { key: `${a}.rope.dimension_count`, type: GgufValueType.UINT32, value: headDim },
    ...(shape.headDim === undefined ? [] : [
      { key: `${a}.attention.key_length`, type: GgufValueType.UINT32, value: headDim },
      { key: `${a}.attention.value_length`, type: GgufValueType.UINT32, value: headDim },
    ] satisfies Metadata),
    { key: `${a}.attention.head_count`, type: GgufValueType.UINT32, value: shape.nHeads },
    { key: `${a}.attention.head_count_kv`, type: GgufValueType.UINT32, value: shape.nKvHeads },
    { key: `${a}.attention.layer_norm_rms_epsilon`, type: GgufValueType.FLOAT32, value: shape.rmsEps },
    { key: `${a}.rope.freq_base`, type: GgufValueType.FLOAT32, value: shape.ropeBase },
    ...(shape.tokenizer === 'spm' ? spmVocabulary(shape.vocab) : bpeVocabulary(shape.vocab, shape.tokenizer === 'llama-bpe')),
  ];
}

export interface EnsureOptions {
  dir?: string;
  force?: boolean;
  /** Progress lines (default: stderr). */
  log?: (line: string) => void;
}

/** The bench file for (shape, type), written first if it is missing. */
export function ensureBenchModel(shape: ModelShape, typeName: string, options: EnsureOptions = {}): string {
  const bench = BENCH_TYPES[typeName];
  if (!bench) throw new Error(`unknown bench type '${typeName}'; one of ${Object.keys(BENCH_TYPES).join(', ')}`);
  const dir = options.dir ?? DEFAULT_MODEL_DIR;
  const path = benchModelFile(shape, typeName, dir);
  if (existsSync(path) && !options.force) return path;
  mkdirSync(dir, { recursive: true });
  const log = options.log ?? ((line: string) => process.stderr.write(line + '\n'));
  const started = performance.now();
  const tty = process.stderr.isTTY;
  writeGgufStreaming(path, metadataOf(shape, typeName), tensorsOf(shape, bench), (done, total) => {
    if (tty) process.stderr.write(`\rwriting ${path}: ${done}/${total} tensors`);
  });
  if (tty) process.stderr.write('\n');
  const seconds = (performance.now() - started) / 1000;
  log(`wrote ${path} (${(statSync(path).size / 1e9).toFixed(2)} GB in ${seconds.toFixed(1)} s)`);
  return path;
}

function listArg(args: string[], name: string): string[] | null {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]!.split(',') : null;
}

export async function run(args: string[]): Promise<void> {
  const outIndex = args.indexOf('--out');
  const dir = outIndex >= 0 ? args[outIndex + 1]! : DEFAULT_MODEL_DIR;
  // The others when asked for, or by e2e as it needs them.
  const models = listArg(args, '--model') ?? DEFAULT_SHAPES;
  const types = listArg(args, '--type') ?? DEFAULT_TYPES;
  for (const m of models) if (!SHAPES[m]) throw new Error(`unknown model '${m}'; one of ${Object.keys(SHAPES).join(', ')}`);
  for (const m of models) {
    for (const t of types) {
      const path = ensureBenchModel(SHAPES[m]!, t, { dir, force: args.includes('--force') });
      console.log(path);
    }
  }
}
