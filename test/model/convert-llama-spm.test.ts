// `kiln convert` on a tiny random Llama 2 (BF16 safetensors, the real Llama 2 SentencePiece
// tokenizer.model, width 256 so q4_0 puts the output matrix in Q6_K as llama.cpp's quantize does):
// kiln's logits on the f16 file against the forward pass computed from the HF weights, kiln
// against llama.cpp on the f16 and q4_0 files, the stored bytes, and the tokenizer against Hugging
// Face's on the same vocabulary.
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfModel } from '../../src/convert/convert-model.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { quantize } from '../../src/reference/quantize.js';
import { loadTokenizer } from '../../src/tokenizer/load-tokenizer.js';
import { vocabularyFromSentencePiece } from '../../src/tokenizer/vocabulary-from-sentencepiece.js';
import { expectAgreement } from '../fixtures/tokenizer/agreement.js';
import { tokenizerCorpus } from '../fixtures/tokenizer/corpus.js';
import { llamaConverterJson } from '../fixtures/tokenizer/llama-converter.js';
import { hfReferenceLogits, kilnEvaluate, randomHfModel, topLogprobs, worstLogprobError, writeHfModel, type HfModel, type HfModelSpec } from '../helpers/hf-model.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { MODELS, SHARED } from '../helpers/paths.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

const SPM_PATH = join(MODELS, 'llama2-tokenizer.model');
const SPEC: HfModelSpec = {
  architecture: 'LlamaForCausalLM', hidden: 256, layers: 2, heads: 4, kvHeads: 2, ffn: 256, vocab: 32000,
  ropeTheta: 10000, rmsEps: 1e-5, tieWordEmbeddings: false, dtype: 'BF16', seed: 7,
};
const PROMPT = 'The quick brown fox jumps. Ünïcödé, 日本語: x = f(y);';
const TEMPLATE = readFileSync(join(SHARED, 'templates', 'llama2-chat.jinja'), 'utf8');

describe('kiln convert: Llama 2 with a SentencePiece tokenizer.model', () => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-spm-'));
  const hfDir = join(work, 'Llama-2-tiny');
  const f16 = join(work, 'f16.gguf');
  const q4 = join(work, 'q4_0.gguf');
  const vocab = vocabularyFromSentencePiece(readFileSync(SPM_PATH));
  const json = llamaConverterJson(vocab.tokens.map((piece, id) => ({ piece, score: vocab.scores![id]!, type: vocab.tokenTypes![id]! })));
  let model: HfModel;

  beforeAll(async () => {
    model = randomHfModel(SPEC);
    const special = (content: string) => ({ content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true });
    writeHfModel(hfDir, model, {
      tokenizerModelPath: SPM_PATH,
      tokenizerJson: json,
      // As meta-llama/Llama-2-7b-chat-hf ships it.
      tokenizerConfig: {
        add_bos_token: true, add_eos_token: false, bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', pad_token: null,
        legacy: false, tokenizer_class: 'LlamaTokenizer', chat_template: TEMPLATE,
        added_tokens_decoder: { 0: special('<unk>'), 1: special('<s>'), 2: special('</s>') },
      },
      generationConfig: { bos_token_id: 1, eos_token_id: 2 },
    });
    await convertHfModel(hfDir, f16, { type: 'f16' });
    await convertHfModel(hfDir, q4, { type: 'q4_0' });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('writes llama metadata, the SentencePiece vocabulary and the chat template', () => {
    const { file } = openGguf(f16);
    const md = file.metadata;
    expect(md.get('general.architecture')).toBe('llama');
    expect(md.get('general.name')).toBe('Llama-2-tiny');
    expect(md.get('general.file_type')).toBe(1);
    expect([md.get('llama.block_count'), md.get('llama.embedding_length'), md.get('llama.feed_forward_length')]).toEqual([2, 256, 256]);
    expect([md.get('llama.attention.head_count'), md.get('llama.attention.head_count_kv'), md.get('llama.rope.dimension_count')]).toEqual([4, 2, 64]);
    expect([md.get('llama.vocab_size'), md.get('llama.context_length')]).toEqual([32000, 4096]);
    expect(md.get('llama.rope.freq_base')).toBe(10000);
    expect(md.get('llama.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-5, 10);
    expect(md.get('tokenizer.ggml.model')).toBe('llama');
    expect(md.get('tokenizer.ggml.pre')).toBe('default');
    expect(md.get('tokenizer.ggml.tokens')).toEqual(vocab.tokens);
    expect([md.get('tokenizer.ggml.bos_token_id'), md.get('tokenizer.ggml.eos_token_id'), md.get('tokenizer.ggml.unknown_token_id')]).toEqual([1, 2, 0]);
    expect([md.get('tokenizer.ggml.add_bos_token'), md.get('tokenizer.ggml.add_eos_token'), md.get('tokenizer.ggml.add_space_prefix')]).toEqual([true, false, true]);
    expect(md.get('tokenizer.chat_template')).toBe(TEMPLATE);
    // The script's rule: tokens tokenizer_config.json declares special become CONTROL with score -1000.
    expect(Array.from((md.get('tokenizer.ggml.token_type') as Int32Array).subarray(0, 4))).toEqual([3, 3, 3, 6]);
    expect(Array.from((md.get('tokenizer.ggml.scores') as Float32Array).subarray(0, 4))).toEqual([-1000, -1000, -1000, 0]);
    const types = Object.fromEntries(file.tensors.map((t) => [t.name, t.type]));
    expect(file.tensors).toHaveLength(2 + 2 * 9 + 1);
    expect([types['token_embd.weight'], types['blk.0.attn_q.weight'], types['blk.1.ffn_down.weight'], types['output.weight']]).toEqual(Array(4).fill(GgmlType.F16));
    expect([types['blk.0.attn_norm.weight'], types['output_norm.weight']]).toEqual([GgmlType.F32, GgmlType.F32]);
  });

  it('q4_0: matrices hold the reference quantizer bytes of the RoPE-permuted weights; output.weight is Q6_K', () => {
    const { file, buffer } = openGguf(q4);
    const bytes = (name: string) => {
      const t = file.tensors.find((x) => x.name === name)!;
      return { type: t.type, data: new Uint8Array(buffer, file.dataOffset + t.offset, t.byteSize) };
    };
    // LlamaModel.permute, written out: row 2i + j of each head is HF row j * headDim/2 + i.
    const k = model.weights.get('model.layers.1.self_attn.k_proj.weight')!.values;
    const headDim = 64;
    const permuted = new Float32Array(k.length);
    for (let row = 0; row < k.length / 256; row++) {
      const head = Math.floor(row / headDim);
      const r = row % headDim;
      const from = head * headDim + (r % 2) * (headDim / 2) + Math.floor(r / 2);
      permuted.set(k.subarray(from * 256, (from + 1) * 256), row * 256);
    }
    expect(bytes('blk.1.attn_k.weight')).toEqual({ type: GgmlType.Q4_0, data: quantize(GgmlType.Q4_0, permuted) });
    expect(bytes('blk.0.ffn_up.weight')).toEqual({ type: GgmlType.Q4_0, data: quantize(GgmlType.Q4_0, model.weights.get('model.layers.0.mlp.up_proj.weight')!.values) });
    // Rows quantize independently; the TS Q6_K quantizer is slow, so 64 of the 32000 rows are checked.
    const output = bytes('output.weight');
    expect(output.type).toBe(GgmlType.Q6_K);
    expect(output.data.subarray(0, 64 * 210)).toEqual(quantize(GgmlType.Q6_K, model.weights.get('lm_head.weight')!.values.subarray(0, 64 * 256)));
    expect(bytes('token_embd.weight').type).toBe(GgmlType.Q4_0);
    expect(file.metadata.get('general.file_type')).toBe(2);
  });

  it('f16: kiln matches the forward pass computed from the HF weights', async () => {
    const { tokens, logits, vocab } = await kilnEvaluate(f16, PROMPT);
    const reference = topLogprobs(hfReferenceLogits(model, tokens), vocab, 10);
    expect(worstLogprobError(logits, vocab, reference)).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
  });

  it.for([['f16', f16, MODEL_LOGPROB_TOLERANCE.float], ['q4_0', q4, MODEL_LOGPROB_TOLERANCE.quantized]] as const)(
    '%s: kiln matches llama.cpp on the converted file', async ([, path, tolerance], ctx) => {
      if (!(await llamaOracleAvailable())) return ctx.skip();
      const { tokens, logits, vocab } = await kilnEvaluate(path, PROMPT);
      expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(path, tokens, 10))).toBeLessThan(tolerance);
    },
  );

  it('the converted tokenizer encodes like Hugging Face on the same vocabulary', () => {
    const tok = loadTokenizer(f16);
    const corpus = tokenizerCorpus(300, 77);
    const refUser = new HfTokenizer({ ...json, added_tokens: [] }, {});
    const refAll = new HfTokenizer(json, {});
    expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false }), (s) => refUser.encode(s, { add_special_tokens: false }).ids);
    expectAgreement(corpus, (s) => tok.encode(s, { addSpecial: false, parseSpecial: true }), (s) => refAll.encode(s, { add_special_tokens: false }).ids);
    expect(tok.encode('Hello')).toEqual([1, ...refUser.encode('Hello', { add_special_tokens: false }).ids]);
  });
});
