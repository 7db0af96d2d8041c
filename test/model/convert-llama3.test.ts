// `kiln convert` on a tiny random Llama 3.1 (F16 weights in two safetensors shards with an index,
// the real Llama 3 tokenizer.json with Meta's BOS post-processor, llama3 RoPE scaling, GQA 4:1,
// untied output): rope_freqs.weight against transformers' scaling, kiln against the forward pass
// from the HF weights and against llama.cpp, and the tokenizer against Hugging Face's.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertHfModel } from '../../src/convert/convert-model.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { lenmlTokenizer, type HfTokenizerJson } from '../fixtures/tokenizer/hf-vocabulary.js';
import {
  expectTokenizerMatchesHf, hfLlama3FreqFactors, hfReferenceLogits, kilnEvaluate, randomHfModel, topLogprobs, worstLogprobError,
  writeHfModel, type HfModel, type HfModelSpec,
} from '../helpers/hf-model.js';
import { llamaOracleAvailable, llamaTopLogprobs } from '../helpers/llama-oracle.js';
import { SHARED } from '../helpers/paths.js';
import { MODEL_LOGPROB_TOLERANCE } from '../kernels/tolerances.js';

const SPEC: HfModelSpec = {
  architecture: 'LlamaForCausalLM', hidden: 64, layers: 2, heads: 4, kvHeads: 1, ffn: 128, vocab: 128256,
  ropeTheta: 500000, rmsEps: 1e-5, tieWordEmbeddings: false, dtype: 'F16', shards: 2, seed: 31,
  // A short original context, so that at the test's positions all three bands of the scaling
  // (kept, smoothed, divided by the factor) turn the rotations measurably.
  ropeScaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 },
};
const PROMPT = 'def fib(n):\n    return fib(n - 1) + 2  # 日本語 ✅';
const TEMPLATE = readFileSync(join(SHARED, 'templates', 'llama3.1.jinja'), 'utf8');
const BOS = 128000;

/** The packaged tokenizer.json with the post-processor Meta's current file has: BOS before every text. */
function metaTokenizerJson(json: HfTokenizerJson): HfTokenizerJson {
  const bos = { id: '<|begin_of_text|>', type_id: 0 };
  return {
    ...json,
    post_processor: {
      type: 'Sequence',
      processors: [
        { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
        {
          type: 'TemplateProcessing',
          single: [{ SpecialToken: bos }, { Sequence: { id: 'A', type_id: 0 } }],
          pair: [{ SpecialToken: bos }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { ...bos, type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
          special_tokens: { '<|begin_of_text|>': { id: '<|begin_of_text|>', ids: [BOS], tokens: ['<|begin_of_text|>'] } },
        },
      ],
    },
  };
}

describe('kiln convert: Llama 3.1 with a byte-level BPE tokenizer.json and llama3 RoPE scaling', () => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-llama3-'));
  const hfDir = join(work, 'Llama-3.1-tiny');
  const f16 = join(work, 'f16.gguf');
  const packaged = lenmlTokenizer('llama3');
  const json = metaTokenizerJson(packaged.json);
  const config = { ...packaged.config, eos_token: '<|eot_id|>', chat_template: TEMPLATE };
  let model: HfModel;

  beforeAll(async () => {
    model = randomHfModel(SPEC);
    model.config['bos_token_id'] = BOS;
    model.config['eos_token_id'] = [128001, 128008, 128009];
    writeHfModel(hfDir, model, {
      tokenizerJson: json,
      tokenizerConfig: config,
      generationConfig: { bos_token_id: BOS, eos_token_id: [128001, 128008, 128009] },
    });
    await convertHfModel(hfDir, f16, { type: 'f16' });
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('names the pre-tokenizer llama-bpe by its hash and reads BOS/EOS as the script does', () => {
    const md = openGguf(f16).file.metadata;
    expect(md.get('tokenizer.ggml.model')).toBe('gpt2');
    expect(md.get('tokenizer.ggml.pre')).toBe('llama-bpe');
    expect((md.get('tokenizer.ggml.tokens') as string[]).length).toBe(128256);
    expect((md.get('tokenizer.ggml.merges') as string[]).length).toBe(json.model.merges.length);
    expect([md.get('tokenizer.ggml.bos_token_id'), md.get('tokenizer.ggml.eos_token_id'), md.get('tokenizer.ggml.add_bos_token')]).toEqual([BOS, 128009, true]);
    expect(md.get('tokenizer.chat_template')).toBe(TEMPLATE);
    expect(md.get('llama.rope.freq_base')).toBe(500000);
    expect(md.has('llama.rope.scaling.type')).toBe(false);
  });

  it('writes rope_freqs.weight as transformers scales the frequencies', () => {
    const { file, buffer } = openGguf(f16);
    const t = file.tensors.find((x) => x.name === 'rope_freqs.weight')!;
    expect([t.type, t.dims]).toEqual([GgmlType.F32, [8]]);
    const stored = new Float32Array(buffer.slice(file.dataOffset + t.offset, file.dataOffset + t.offset + t.byteSize));
    const expected = hfLlama3FreqFactors(SPEC)!;
    expect(new Set(expected)).toContain(1);
    expect(new Set(expected)).toContain(8);
    stored.forEach((v, i) => expect(v).toBeCloseTo(expected[i]!, 5));
  });

  it('f16: kiln matches the forward pass computed from the HF weights, and llama.cpp', async (ctx) => {
    const { tokens, logits, vocab } = await kilnEvaluate(f16, PROMPT);
    expect(tokens[0]).toBe(BOS);
    expect(worstLogprobError(logits, vocab, topLogprobs(hfReferenceLogits(model, tokens), vocab, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
    if (!(await llamaOracleAvailable())) return ctx.skip();
    expect(worstLogprobError(logits, vocab, await llamaTopLogprobs(f16, tokens, 10))).toBeLessThan(MODEL_LOGPROB_TOLERANCE.float);
  });

  it('the converted tokenizer encodes like Hugging Face on the same tokenizer.json', () => {
    expectTokenizerMatchesHf(f16, json, config, BOS);
  });
});
