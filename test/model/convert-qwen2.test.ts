// `kiln convert` on a tiny random Qwen2 (F32 weights, Q/K/V biases, tied embeddings, the real
// Qwen tokenizer.json, config.json's vocab_size past the tokenizer's so the list is padded): no
// output.weight, biases kept F32, kiln against the forward pass from the HF weights and against
// llama.cpp, and the tokenizer against Hugging Face's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfModel } from '../../src/convert/convert-model.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { TokenType } from '../../src/tokenizer/token-type.js';
import { lenmlTokenizer } from '../fixtures/tokenizer/hf-vocabulary.js';
import {
  expectTokenizerMatchesHf, hfReferenceLogits, kilnEvaluate, randomHfModel, topLogprobs, worstLogprobError, writeHfModel,
  type HfModel, type HfModelSpec,
} from '../helpers/hf-model.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { SHARED } from '../helpers/paths.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

const SPEC: HfModelSpec = {
  architecture: 'Qwen2ForCausalLM', hidden: 64, layers: 2, heads: 4, kvHeads: 2, ffn: 128, vocab: 151936,
  ropeTheta: 1000000, rmsEps: 1e-6, tieWordEmbeddings: true, qkvBias: true, dtype: 'F32', seed: 53,
};
const PROMPT = '<|im_start|>user\nWhat is 12345 + 678? Answer in JSON: {"sum": …}<|im_end|>';
const TEMPLATE = readFileSync(join(SHARED, 'templates', 'qwen2.5.jinja'), 'utf8');

describe('kiln convert: Qwen2 with biases and tied embeddings', () => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-qwen2-'));
  const hfDir = join(work, 'Qwen2.5-tiny');
  const f16 = join(work, 'f16.gguf');
  const { json, config: packagedConfig } = lenmlTokenizer('qwen3');
  const config = { ...packagedConfig, chat_template: TEMPLATE };
  let model: HfModel;

  beforeAll(async () => {
    model = randomHfModel(SPEC);
    Object.assign(model.config, { bos_token_id: 151643, eos_token_id: 151645 });
    writeHfModel(hfDir, model, { tokenizerJson: json, tokenizerConfig: config });
    await convertHfModel(hfDir, f16, { type: 'f16' });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('leaves out output.weight, keeps the biases F32 and pads the vocabulary to vocab_size', () => {
    const { file } = openGguf(f16);
    const md = file.metadata;
    const types = Object.fromEntries(file.tensors.map((t) => [t.name, t.type]));
    expect(types['output.weight']).toBeUndefined();
    expect([types['blk.0.attn_q.bias'], types['blk.1.attn_v.bias'], types['blk.0.attn_q.weight']]).toEqual([GgmlType.F32, GgmlType.F32, GgmlType.F16]);
    expect(md.get('general.architecture')).toBe('qwen2');
    expect(md.has('qwen2.vocab_size')).toBe(false);
    expect(md.get('tokenizer.ggml.pre')).toBe('qwen2');
    const tokens = md.get('tokenizer.ggml.tokens') as string[];
    const tokenTypes = md.get('tokenizer.ggml.token_type') as Int32Array;
    expect(tokens.length).toBe(151936);
    expect([tokens[151669], tokenTypes[151669]]).toEqual(['[PAD151669]', TokenType.UNUSED]);
    expect([tokens[151645], tokenTypes[151645]]).toEqual(['<|im_end|>', TokenType.CONTROL]);
    expect([tokens[151657], tokenTypes[151657]]).toEqual(['<tool_call>', TokenType.USER_DEFINED]);
    // BOS from config.json (tokenizer_config.json says null), EOS and padding from tokenizer_config.json.
    expect([md.get('tokenizer.ggml.bos_token_id'), md.get('tokenizer.ggml.eos_token_id'), md.get('tokenizer.ggml.padding_token_id')]).toEqual([151643, 151645, 151643]);
    expect(md.get('tokenizer.ggml.add_bos_token')).toBe(false);
    expect(md.get('tokenizer.chat_template')).toBe(TEMPLATE);
  });

  it('f16: kiln matches the forward pass computed from the HF weights, and llama.cpp', async (ctx) => {
    const { tokens, logits, vocab } = await kilnEvaluate(f16, PROMPT);
    expect(worstLogprobError(logits, vocab, topLogprobs(hfReferenceLogits(model, tokens), vocab, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
    if (!(await llamaOracleAvailable())) return ctx.skip();
    expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(f16, tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
  });

  it('the converted tokenizer encodes like Hugging Face on the same tokenizer.json', () => {
    expectTokenizerMatchesHf(f16, json, config, null);
  });
});
