// `kiln convert` on tiny random Qwen2 and Qwen3 models with the real Qwen tokenizer.json (and
// config.json's vocab_size past the tokenizer's, so the list is padded): Qwen2 with F32 weights,
// Q/K/V biases and tied embeddings; Qwen3 with BF16 weights, Q/K RMS norms, head_dim 32 where
// hidden / heads is 16, and a q8_0 file too. kiln against the forward pass from the HF weights and
// against llama.cpp, and the tokenizer against Hugging Face's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfModel, type OutputType } from '../../src/convert/convert-model.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import type { GgufFile } from '../../src/gguf/types.js';
import { TokenType } from '../../src/tokenizer/token-type.js';
import { lenmlTokenizer } from '../fixtures/tokenizer/hf-vocabulary.js';
import {
  expectTokenizerMatchesHf, hfReferenceLogits, kilnEvaluate, randomHfModel, topLogprobs, worstLogprobError, writeHfModel,
  type HfModel, type HfModelSpec,
} from '../helpers/hf-model.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { SHARED } from '../helpers/paths.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

interface Case {
  name: string;
  spec: HfModelSpec;
  template: string;
  types: OutputType[];
  prompt: string;
  /** Checks of what is particular to the family, on its last converted file. */
  check: (file: GgufFile) => void;
}

const CASES: Case[] = [
  {
    name: 'Qwen2 with biases and tied embeddings',
    spec: {
      architecture: 'Qwen2ForCausalLM', hidden: 64, layers: 2, heads: 4, kvHeads: 2, ffn: 128, vocab: 151936,
      ropeTheta: 1000000, rmsEps: 1e-6, tieWordEmbeddings: true, qkvBias: true, dtype: 'F32', seed: 53,
    },
    template: 'qwen2.5.jinja',
    types: ['f16'],
    prompt: '<|im_start|>user\n12345 + 678 = {"sum": …}<|im_end|>',
    check: (file) => {
      const types = Object.fromEntries(file.tensors.map((t) => [t.name, t.type]));
      expect(types['output.weight']).toBeUndefined();
      expect([types['blk.0.attn_q.bias'], types['blk.1.attn_v.bias'], types['blk.0.attn_q.weight']]).toEqual([GgmlType.F32, GgmlType.F32, GgmlType.F16]);
      expect(file.metadata.has('qwen2.vocab_size')).toBe(false);
    },
  },
  {
    name: 'Qwen3 with Q/K norms and a separate head_dim',
    spec: {
      architecture: 'Qwen3ForCausalLM', hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, ffn: 128, vocab: 151936,
      ropeTheta: 1000000, rmsEps: 1e-6, tieWordEmbeddings: false, qkNorm: true, dtype: 'BF16', seed: 97,
    },
    template: 'qwen3.jinja',
    types: ['f16', 'q8_0'],
    prompt: '<|im_start|><think>\n\n</think>\n\nget_weather(Paris) Привет 世界<|im_end|>',
    check: (file) => {
      const md = file.metadata;
      expect([md.get('qwen3.attention.key_length'), md.get('qwen3.attention.value_length'), md.get('general.file_type')]).toEqual([32, 32, 7]);
      const byName = Object.fromEntries(file.tensors.map((t) => [t.name, t]));
      expect([byName['blk.1.attn_q_norm.weight']!.type, byName['blk.1.attn_q_norm.weight']!.dims]).toEqual([GgmlType.F32, [32]]);
      expect([byName['blk.0.attn_q.weight']!.type, byName['blk.0.attn_q.weight']!.dims]).toEqual([GgmlType.Q8_0, [64, 128]]);
      expect([byName['output.weight']!.type, byName['token_embd.weight']!.type]).toEqual([GgmlType.Q8_0, GgmlType.Q8_0]);
    },
  },
];

describe.each(CASES)('kiln convert: $name', (c) => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-qwen-'));
  const hfDir = join(work, 'Qwen-tiny');
  const out = (type: OutputType) => join(work, `${type}.gguf`);
  const { json, config: packagedConfig } = lenmlTokenizer('qwen3');
  const template = readFileSync(join(SHARED, 'templates', c.template), 'utf8');
  const config = { ...packagedConfig, chat_template: template };
  let model: HfModel;

  beforeAll(async () => {
    model = randomHfModel(c.spec);
    Object.assign(model.config, { bos_token_id: 151643, eos_token_id: 151645 });
    writeHfModel(hfDir, model, { tokenizerJson: json, tokenizerConfig: config });
    for (const type of c.types) await convertHfModel(hfDir, out(type), { type });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('writes the family\'s tensors and metadata, and the Qwen vocabulary padded to vocab_size', () => {
    const { file } = openGguf(out(c.types.at(-1)!));
    const md = file.metadata;
    c.check(file);
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
    expect(md.get('tokenizer.chat_template')).toBe(template);
  });

  it('f16: kiln matches the forward pass computed from the HF weights, and llama.cpp', async (ctx) => {
    const { tokens, logits, vocab } = await kilnEvaluate(out('f16'), c.prompt);
    expect(worstLogprobError(logits, vocab, topLogprobs(hfReferenceLogits(model, tokens), vocab, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
    if (!(await llamaOracleAvailable())) return ctx.skip();
    expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(out('f16'), tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
  });

  if (c.types.includes('q8_0')) {
    it('q8_0: kiln matches llama.cpp on the converted file', async (ctx) => {
      if (!(await llamaOracleAvailable())) return ctx.skip();
      const { tokens, logits, vocab } = await kilnEvaluate(out('q8_0'), c.prompt);
      expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(out('q8_0'), tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.quantized);
    });
  }

  it('the converted tokenizer encodes like Hugging Face on the same tokenizer.json', () => {
    expectTokenizerMatchesHf(out('f16'), json, config, null);
  });
});
