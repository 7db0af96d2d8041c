// Tiny Hugging Face model directories for `kiln convert` tests: config.json, random weights in
// safetensors (BF16, F16 or F32, optionally sharded with an index), and whatever tokenizer files a
// test hands over; plus the forward pass of the same model computed straight from the HF weights
// with src/reference ops, the way transformers runs it (rotate-half RoPE, HF's Llama 3 frequency
// scaling), so nothing of the converter is involved in the expected logits.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { add } from '../../src/reference/add.js';
import { attention } from '../../src/reference/attention.js';
import { getRows } from '../../src/reference/get-rows.js';
import { matMul } from '../../src/reference/mat-mul.js';
import { bf16ToFloat, floatToBf16, floatToFp16, fp16ToFloat } from '../../src/reference/quantize.js';
import { rmsNorm } from '../../src/reference/rms-norm.js';
import { rope } from '../../src/reference/rope.js';
import { swiglu } from '../../src/reference/swiglu.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { logSoftmax } from '../../src/sampling/log-softmax.js';
import { expect } from 'vitest';
import { expectAgreement } from '../fixtures/tokenizer/agreement.js';
import { tokenizerCorpus } from '../fixtures/tokenizer/corpus.js';
import { hfReference, type HfTokenizerJson } from '../fixtures/tokenizer/hf-vocabulary.js';
import { prng } from './prng.js';

export type HfDtype = 'BF16' | 'F16' | 'F32';

export interface HfModelSpec {
  architecture: 'LlamaForCausalLM' | 'MistralForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM';
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  /** Written to config.json as head_dim; default hidden / heads (and not written). */
  headDim?: number;
  ffn: number;
  vocab: number;
  ropeTheta: number;
  rmsEps: number;
  ropeScaling?: Record<string, unknown>;
  tieWordEmbeddings: boolean;
  /** Q/K/V projection biases (Qwen2). */
  qkvBias?: boolean;
  /** Per-head Q/K RMS norm weights (Qwen3). */
  qkNorm?: boolean;
  dtype: HfDtype;
  /** Split the weights over this many files with a model.safetensors.index.json (default 1). */
  shards?: number;
  seed: number;
}

export interface HfWeight {
  shape: number[];
  /** Exactly the values the file stores (rounded to the dtype). */
  values: Float32Array;
}

export interface HfModel {
  spec: HfModelSpec;
  config: Record<string, unknown>;
  weights: Map<string, HfWeight>;
}

/** Random weights of `spec`: matrices uniform with standard deviation 0.08, norm weights around 1. */
export function randomHfModel(spec: HfModelSpec): HfModel {
  const r = prng(spec.seed);
  const round = rounder(spec.dtype);
  const weights = new Map<string, HfWeight>();
  const a = 0.08 * Math.sqrt(3);
  const tensor = (name: string, shape: number[], center = 0): void => {
    const values = new Float32Array(shape.reduce((x, y) => x * y, 1));
    for (let i = 0; i < values.length; i++) values[i] = round(center + (2 * r.next() - 1) * a);
    weights.set(name, { shape, values });
  };
  const { hidden, ffn, vocab, heads, kvHeads } = spec;
  const hd = headDim(spec);
  tensor('model.embed_tokens.weight', [vocab, hidden]);
  for (let l = 0; l < spec.layers; l++) {
    const p = `model.layers.${l}`;
    tensor(`${p}.input_layernorm.weight`, [hidden], 1);
    tensor(`${p}.self_attn.q_proj.weight`, [heads * hd, hidden]);
    tensor(`${p}.self_attn.k_proj.weight`, [kvHeads * hd, hidden]);
    tensor(`${p}.self_attn.v_proj.weight`, [kvHeads * hd, hidden]);
    if (spec.qkvBias) {
      tensor(`${p}.self_attn.q_proj.bias`, [heads * hd]);
      tensor(`${p}.self_attn.k_proj.bias`, [kvHeads * hd]);
      tensor(`${p}.self_attn.v_proj.bias`, [kvHeads * hd]);
    }
    if (spec.qkNorm) {
      tensor(`${p}.self_attn.q_norm.weight`, [hd], 1);
      tensor(`${p}.self_attn.k_norm.weight`, [hd], 1);
    }
    tensor(`${p}.self_attn.o_proj.weight`, [hidden, heads * hd]);
    tensor(`${p}.post_attention_layernorm.weight`, [hidden], 1);
    tensor(`${p}.mlp.gate_proj.weight`, [ffn, hidden]);
    tensor(`${p}.mlp.up_proj.weight`, [ffn, hidden]);
    tensor(`${p}.mlp.down_proj.weight`, [hidden, ffn]);
  }
  tensor('model.norm.weight', [hidden], 1);
  if (!spec.tieWordEmbeddings) tensor('lm_head.weight', [vocab, hidden]);

  const config: Record<string, unknown> = {
    architectures: [spec.architecture],
    model_type: { LlamaForCausalLM: 'llama', MistralForCausalLM: 'mistral', Qwen2ForCausalLM: 'qwen2', Qwen3ForCausalLM: 'qwen3' }[spec.architecture],
    hidden_size: hidden,
    intermediate_size: ffn,
    num_hidden_layers: spec.layers,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    ...(spec.headDim !== undefined ? { head_dim: spec.headDim } : {}),
    vocab_size: vocab,
    max_position_embeddings: 4096,
    rms_norm_eps: spec.rmsEps,
    rope_theta: spec.ropeTheta,
    rope_scaling: spec.ropeScaling ?? null,
    tie_word_embeddings: spec.tieWordEmbeddings,
    hidden_act: 'silu',
    torch_dtype: { BF16: 'bfloat16', F16: 'float16', F32: 'float32' }[spec.dtype],
  };
  return { spec, config, weights };
}

export interface HfTokenizerFiles {
  /** tokenizer.json contents. */
  tokenizerJson?: unknown;
  /** A SentencePiece model to copy in as tokenizer.model. */
  tokenizerModelPath?: string;
  tokenizerConfig?: Record<string, unknown>;
  generationConfig?: Record<string, unknown>;
}

/** Writes the model directory: config.json, the safetensors file(s), and the tokenizer files. */
export function writeHfModel(dir: string, model: HfModel, files: HfTokenizerFiles): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(model.config, null, 2));
  const names = [...model.weights.keys()];
  const shards = model.spec.shards ?? 1;
  if (shards === 1) {
    writeSafetensors(join(dir, 'model.safetensors'), names.map((n) => ({ name: n, dtype: model.spec.dtype, ...model.weights.get(n)! })));
  } else {
    const weightMap: Record<string, string> = {};
    for (let s = 0; s < shards; s++) {
      const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = names.filter((_, i) => i % shards === s);
      for (const n of part) weightMap[n] = file;
      writeSafetensors(join(dir, file), part.map((n) => ({ name: n, dtype: model.spec.dtype, ...model.weights.get(n)! })));
    }
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  }
  if (files.tokenizerJson !== undefined) writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(files.tokenizerJson));
  if (files.tokenizerModelPath !== undefined) copyFileSync(files.tokenizerModelPath, join(dir, 'tokenizer.model'));
  if (files.tokenizerConfig !== undefined) writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(files.tokenizerConfig, null, 2));
  if (files.generationConfig !== undefined) writeFileSync(join(dir, 'generation_config.json'), JSON.stringify(files.generationConfig, null, 2));
}

export interface SafetensorsEntry {
  name: string;
  dtype: HfDtype;
  shape: number[];
  values: Float32Array;
}

/** The bytes of a safetensors file holding `tensors` in order (header padded to 8 bytes, as the Python writer does). */
export function safetensorsBytes(tensors: SafetensorsEntry[], metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  const datas: Uint8Array[] = [];
  let offset = 0;
  for (const t of tensors) {
    const data = encodeValues(t.dtype, t.values);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + data.length] };
    datas.push(data);
    offset += data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const d of datas) {
    out.set(d, at);
    at += d.length;
  }
  return out;
}

export function writeSafetensors(path: string, tensors: SafetensorsEntry[]): void {
  writeFileSync(path, safetensorsBytes(tensors));
}

function encodeValues(dtype: HfDtype, values: Float32Array): Uint8Array {
  const copy = values.slice();
  if (dtype === 'F32') return new Uint8Array(copy.buffer);
  // The values are exactly representable, so a BF16 is the high half of the float32's bits.
  const bits = dtype === 'BF16' ? Uint16Array.from(new Uint32Array(copy.buffer), (u) => u >>> 16) : Uint16Array.from(values, floatToFp16);
  return new Uint8Array(bits.buffer);
}

function rounder(dtype: HfDtype): (x: number) => number {
  if (dtype === 'BF16') return (x) => bf16ToFloat(floatToBf16(x));
  if (dtype === 'F16') return (x) => fp16ToFloat(floatToFp16(x));
  return Math.fround;
}

export function headDim(spec: HfModelSpec): number {
  return spec.headDim ?? spec.hidden / spec.heads;
}

/**
 * transformers' rotary frequencies with its Llama 3 scaling (_compute_llama3_parameters), in
 * double precision, as the divisors the reference rope takes: 1 where unscaled.
 */
export function hfLlama3FreqFactors(spec: HfModelSpec): Float32Array | undefined {
  const s = spec.ropeScaling;
  if (!s || s['rope_type'] !== 'llama3') return undefined;
  const factor = s['factor'] as number;
  const low = s['low_freq_factor'] as number;
  const high = s['high_freq_factor'] as number;
  const original = s['original_max_position_embeddings'] as number;
  const hd = headDim(spec);
  return Float32Array.from({ length: hd / 2 }, (_, i) => {
    const invFreq = 1 / spec.ropeTheta ** ((2 * i) / hd);
    const wavelen = (2 * Math.PI) / invFreq;
    let scaled = wavelen > original / low ? invFreq / factor : invFreq;
    if (wavelen >= original / high && wavelen <= original / low) {
      const smooth = (original / wavelen - low) / (high - low);
      scaled = ((1 - smooth) * scaled) / factor + smooth * scaled;
    }
    return invFreq / scaled;
  });
}

/** Logits (tokens.length, vocab) of the HF model under teacher forcing, from the HF weights. */
export function hfReferenceLogits(model: HfModel, tokens: number[]): Float32Array {
  const { spec, weights } = model;
  const w = (name: string): Float32Array => weights.get(name)!.values;
  const n = tokens.length;
  const hd = headDim(spec);
  const qDim = spec.heads * hd;
  const kvDim = spec.kvHeads * hd;
  const positions = Int32Array.from(tokens, (_, i) => i);
  const freqFactors = hfLlama3FreqFactors(spec);
  const ropeOptions = { nRot: hd, mode: 'neox' as const, freqBase: spec.ropeTheta, freqScale: 1, ...(freqFactors ? { freqFactors } : {}) };
  const withBias = (y: Float32Array, bias: string, width: number): Float32Array => {
    if (!weights.has(bias)) return y;
    const b = w(bias);
    return y.map((v, i) => v + b[i % width]!);
  };

  let x = getRows(w('model.embed_tokens.weight'), spec.vocab, spec.hidden, tokens);
  for (let l = 0; l < spec.layers; l++) {
    const p = `model.layers.${l}`;
    const h = rmsNorm(x, w(`${p}.input_layernorm.weight`), n, spec.hidden, spec.rmsEps);
    let q = withBias(matMul(w(`${p}.self_attn.q_proj.weight`), qDim, spec.hidden, h, n), `${p}.self_attn.q_proj.bias`, qDim);
    let k = withBias(matMul(w(`${p}.self_attn.k_proj.weight`), kvDim, spec.hidden, h, n), `${p}.self_attn.k_proj.bias`, kvDim);
    const v = withBias(matMul(w(`${p}.self_attn.v_proj.weight`), kvDim, spec.hidden, h, n), `${p}.self_attn.v_proj.bias`, kvDim);
    if (spec.qkNorm) {
      q = rmsNorm(q, w(`${p}.self_attn.q_norm.weight`), n * spec.heads, hd, spec.rmsEps);
      k = rmsNorm(k, w(`${p}.self_attn.k_norm.weight`), n * spec.kvHeads, hd, spec.rmsEps);
    }
    q = rope(q, n, spec.heads, hd, positions, ropeOptions);
    k = rope(k, n, spec.kvHeads, hd, positions, ropeOptions);
    const att = attention(q, k, v, { nTokens: n, nHeads: spec.heads, nKvHeads: spec.kvHeads, headDim: hd, scale: 1 / Math.sqrt(hd), positions, kvLength: n });
    x = add(x, matMul(w(`${p}.self_attn.o_proj.weight`), spec.hidden, qDim, att, n));
    const f = rmsNorm(x, w(`${p}.post_attention_layernorm.weight`), n, spec.hidden, spec.rmsEps);
    const act = swiglu(matMul(w(`${p}.mlp.gate_proj.weight`), spec.ffn, spec.hidden, f, n), matMul(w(`${p}.mlp.up_proj.weight`), spec.ffn, spec.hidden, f, n));
    x = add(x, matMul(w(`${p}.mlp.down_proj.weight`), spec.hidden, spec.ffn, act, n));
  }
  const normed = rmsNorm(x, w('model.norm.weight'), n, spec.hidden, spec.rmsEps);
  const head = spec.tieWordEmbeddings ? w('model.embed_tokens.weight') : w('lm_head.weight');
  return matMul(head, spec.vocab, spec.hidden, normed, n);
}

export interface TopLogprob {
  pos: number;
  top: Array<{ id: number; logprob: number }>;
}

/** The k most likely next tokens at every position of (n, vocab) logits, with their log-probabilities. */
export function topLogprobs(logits: Float32Array, vocab: number, k: number): TopLogprob[] {
  const out: TopLogprob[] = [];
  for (let pos = 0; pos < logits.length / vocab; pos++) {
    const lp = logSoftmax(logits.subarray(pos * vocab, (pos + 1) * vocab));
    const top: Array<{ id: number; logprob: number }> = [];
    for (let id = 0; id < vocab; id++) {
      if (top.length === k && lp[id]! <= top[k - 1]!.logprob) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]!.logprob < lp[id]!) at--;
      top.splice(at, 0, { id, logprob: lp[id]! });
      if (top.length > k) top.pop();
    }
    out.push({ pos, top });
  }
  return out;
}

/** Largest |log-probability| difference of `logits` from the reference's listed tokens. */
export function worstLogprobError(logits: Float32Array, vocab: number, reference: readonly TopLogprob[]): number {
  let worst = 0;
  for (const p of reference) {
    const lp = logSoftmax(logits.subarray(p.pos * vocab, (p.pos + 1) * vocab));
    for (const e of p.top) worst = Math.max(worst, Math.abs(lp[e.id]! - e.logprob));
  }
  return worst;
}

/** kiln's teacher-forced logits (tokens.length, vocab) for `prompt` (special tokens parsed, BOS as the file says) on the model at `path`. */
export async function kilnEvaluate(path: string, prompt: string): Promise<{ tokens: number[]; logits: Float32Array; vocab: number }> {
  const rt = await Runtime.load({ model: path, threads: 1, kvCacheType: 'f32', maxBatch: 64 });
  try {
    const tokens = rt.tokenize(prompt, { parseSpecial: true });
    return { tokens, logits: await rt.evaluate(tokens), vocab: rt.info.hparams.vocabSize };
  } finally {
    await rt.close();
  }
}

/**
 * The tokenizer of the converted file at `path` against Hugging Face's on the tokenizer.json it
 * came from, over a few hundred corpus strings: user content, template text with special tokens,
 * and BOS as the file says (`bos` null: none).
 */
export function expectTokenizerMatchesHf(path: string, json: HfTokenizerJson, config: Record<string, unknown>, bos: number | null): void {
  const tok = loadTokenizer(path);
  const corpus = tokenizerCorpus(300, 77);
  const refUser = hfReference(json, config, false);
  const refAll = hfReference(json, config, true);
  expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false }), (s) => refUser.encode(s, { add_special_tokens: false }).ids);
  expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false, parseSpecial: true }), (s) => refAll.encode(s, { add_special_tokens: false }).ids);
  expect(tok.encode('Hello')).toEqual([...(bos === null ? [] : [bos]), ...refUser.encode('Hello', { add_special_tokens: false }).ids]);
}

/**
 * A small GPT-2-style tokenizer.json: the 256 byte tokens of the ByteLevel alphabet, the merges
 * given, and <|endoftext|> as a special added token. For tests that need a valid vocabulary but
 * not a real one.
 */
export function byteLevelTokenizerJson(merges: Array<[string, string]> = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he']]): HfTokenizerJson {
  const vocab: Record<string, number> = {};
  let next = 0;
  for (let b = 0; b < 256; b++) vocab[byteLevelChar(b)] = next++;
  for (const [l, r] of merges) if (!(l + r in vocab)) vocab[l + r] = next++;
  return {
    version: '1.0',
    added_tokens: [{ id: next, content: '<|endoftext|>', special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', vocab, merges, byte_fallback: false, ignore_merges: false },
  };
}

/** GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the rest for U+0100 onwards. */
function byteLevelChar(b: number): string {
  const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  if (printable) return String.fromCharCode(b);
  let n = 0;
  for (let x = 0; x < b; x++) if (!((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae && x <= 0xff))) n++;
  return String.fromCharCode(256 + n);
}
