// `kiln convert` on a tiny random Qwen3 (BF16 weights, Q/K RMS norms, head_dim 32 where
// hidden / heads is 16, untied output), to f16 and q8_0: key_length written, norms F32, kiln
// against the forward pass from the HF weights and against llama.cpp, and the tokenizer against
// Hugging Face's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfModel } from '../../src/convert/convert-model.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { lenmlTokenizer } from '../fixtures/tokenizer/hf-vocabulary.js';
import {
  expectTokenizerMatchesHf, hfReferenceLogits, kilnEvaluate, randomHfModel, topLogprobs, worstLogprobError, writeHfModel,
  type HfModel, type HfModelSpec,
} from '../helpers/hf-model.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { SHARED } from '../helpers/paths.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

const SPEC: HfModelSpec = {
  architecture: 'Qwen3ForCausalLM', hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, ffn: 128, vocab: 151936,
  ropeTheta: 1000000, rmsEps: 1e-6, tieWordEmbeddings: false, qkNorm: true, dtype: 'BF16', seed: 97,
};
const PROMPT = '<|im_start|>user\n<think>\n\n</think>\n\nCall get_weather for Paris, FR. Привет, 世界!<|im_end|>';
const TEMPLATE = readFileSync(join(SHARED, 'templates', 'qwen3.jinja'), 'utf8');

describe('kiln convert: Qwen3 with Q/K norms and a separate head_dim', () => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-qwen3-'));
  const hfDir = join(work, 'Qwen3-tiny');
  const f16 = join(work, 'f16.gguf');
  const q8 = join(work, 'q8_0.gguf');
  const { json, config: packagedConfig } = lenmlTokenizer('qwen3');
  const config = { ...packagedConfig, chat_template: TEMPLATE };
  let model: HfModel;

  beforeAll(async () => {
    model = randomHfModel(SPEC);
    Object.assign(model.config, { bos_token_id: 151643, eos_token_id: 151645 });
    writeHfModel(hfDir, model, { tokenizerJson: json, tokenizerConfig: config });
    await convertHfModel(hfDir, f16, { type: 'f16' });
    await convertHfModel(hfDir, q8, { type: 'q8_0' });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('writes key_length/value_length and keeps the Q/K norms F32', () => {
    const { file } = openGguf(q8);
    const md = file.metadata;
    expect(md.get('general.architecture')).toBe('qwen3');
    expect([md.get('qwen3.attention.key_length'), md.get('qwen3.attention.value_length')]).toEqual([32, 32]);
    expect(md.get('general.file_type')).toBe(7);
    const byName = Object.fromEntries(file.tensors.map((t) => [t.name, t]));
    expect([byName['blk.1.attn_q_norm.weight']!.type, byName['blk.1.attn_q_norm.weight']!.dims]).toEqual([GgmlType.F32, [32]]);
    expect([byName['blk.0.attn_q.weight']!.type, byName['blk.0.attn_q.weight']!.dims]).toEqual([GgmlType.Q8_0, [64, 128]]);
    expect([byName['output.weight']!.type, byName['token_embd.weight']!.type]).toEqual([GgmlType.Q8_0, GgmlType.Q8_0]);
  });

  it('f16: kiln matches the forward pass computed from the HF weights, and llama.cpp', async (ctx) => {
    const { tokens, logits, vocab } = await kilnEvaluate(f16, PROMPT);
    expect(worstLogprobError(logits, vocab, topLogprobs(hfReferenceLogits(model, tokens), vocab, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
    if (!(await llamaOracleAvailable())) return ctx.skip();
    expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(f16, tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
  });

  it('q8_0: kiln matches llama.cpp on the converted file', async (ctx) => {
    if (!(await llamaOracleAvailable())) return ctx.skip();
    const { tokens, logits, vocab } = await kilnEvaluate(q8, PROMPT);
    expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(q8, tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.quantized);
  });

  it('the converted tokenizer encodes like Hugging Face on the same tokenizer.json', () => {
    expectTokenizerMatchesHf(f16, json, config, null);
  });
});
