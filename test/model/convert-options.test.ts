// The smaller rules of `kiln convert` on tiny models: the streaming writer against the in-memory
// one, storage types per tensor, Mistral and RoPE scaling metadata, shards without an index, chat
// template lists and files, special tokens from post-processors and generation_config.json, and
// the command line (its summary line and argument errors).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { progressLine } from '../../src/cli/convert.js';
import { convertHfModel } from '../../src/convert/convert-model.js';
import { bpeVocabulary } from '../../src/convert/bpe-vocabulary.js';
import { choosePreTokenizer } from '../../src/convert/pre-tokenizer-name.js';
import { readSpecialTokens } from '../../src/convert/special-tokens.js';
import { storageType } from '../../src/convert/tensor-plan.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { openGguf } from '../../src/gguf/open-gguf.js';
import { GgufStreamWriter } from '../../src/gguf/stream-writer.js';
import { GgufValueType } from '../../src/gguf/types.js';
import { writeGguf, type GgufWriteSpec } from '../../src/gguf/writer.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { byteLevelTokenizerJson, randomHfModel, writeHfModel, type HfModel, type HfModelSpec } from '../helpers/hf-model.js';

const TINY: HfModelSpec = {
  architecture: 'LlamaForCausalLM', hidden: 32, layers: 1, heads: 2, kvHeads: 1, ffn: 64, vocab: 260,
  ropeTheta: 10000, rmsEps: 1e-5, tieWordEmbeddings: true, dtype: 'BF16', seed: 5,
};

const work = mkdtempSync(join(tmpdir(), 'kiln-convert-options-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let n = 0;

function modelDir(spec: Partial<HfModelSpec>, tokenizerConfig: Record<string, unknown> = { eos_token: '<|endoftext|>' }, edit?: (m: HfModel) => void): string {
  const dir = join(work, `m${n++}`);
  const model = randomHfModel({ ...TINY, ...spec });
  edit?.(model);
  writeHfModel(dir, model, { tokenizerJson: byteLevelTokenizerJson(), tokenizerConfig });
  return dir;
}

describe('GgufStreamWriter', () => {
  const spec: GgufWriteSpec = {
    metadata: [
      { key: 'general.alignment', type: GgufValueType.UINT32, value: 64 },
      { key: 'a.list', type: GgufValueType.ARRAY, elementType: GgufValueType.STRING, value: ['x', 'yz'] },
    ],
    tensors: [
      { name: 'odd', dims: [3], type: GgmlType.F32, data: Uint8Array.from({ length: 12 }, (_, i) => i + 1) },
      { name: 'q', dims: [32, 2], type: GgmlType.Q8_0, data: Uint8Array.from({ length: 68 }, (_, i) => 255 - i) },
    ],
  };

  it('writes the same bytes as writeGguf, in chunks', async () => {
    const path = join(work, 'stream.gguf');
    const w = await GgufStreamWriter.create(path, { metadata: spec.metadata!, tensors: spec.tensors!.map(({ name, dims, type }) => ({ name, dims, type })) });
    await w.write(spec.tensors![0]!.data);
    await w.write(spec.tensors![1]!.data.subarray(0, 30));
    await w.write(spec.tensors![1]!.data.subarray(30));
    expect(w.current).toBeNull();
    await w.finish();
    expect(new Uint8Array(readFileSync(path))).toEqual(writeGguf(spec));
    expect(w.bytesWritten).toBe(w.fileSize);
  });

  it('refuses a chunk past its tensor and deletes an unfinished file', async () => {
    const path = join(work, 'unfinished.gguf');
    const w = await GgufStreamWriter.create(path, { tensors: [{ name: 't', dims: [2], type: GgmlType.F32 }] });
    await expect(w.write(new Uint8Array(12))).rejects.toThrow(/takes 8 bytes/);
    await expect(w.finish()).rejects.toThrow(/"t" and any after it were not written/);
    expect(existsSync(path) || existsSync(`${path}.${process.pid}.partial`)).toBe(false);
  });
});

describe('storage types', () => {
  it('keeps vectors and norms F32, falls back to F16 for rows that do not fill blocks, and uses Q6_K for the q4_0 output', () => {
    expect(storageType('blk.0.attn_norm.weight', [64], 'q4_0', true)).toBe(GgmlType.F32);
    expect(storageType('blk.0.attn_q_norm.weight', [2, 64], 'q8_0', true)).toBe(GgmlType.F32);
    expect(storageType('blk.0.attn_q.bias', [64], 'f16', true)).toBe(GgmlType.F32);
    expect(storageType('blk.0.attn_q.weight', [64, 48], 'q8_0', true)).toBe(GgmlType.F16);
    expect(storageType('blk.0.attn_q.weight', [64, 64], 'q4_0', true)).toBe(GgmlType.Q4_0);
    expect(storageType('output.weight', [1000, 256], 'q4_0', true)).toBe(GgmlType.Q6_K);
    expect(storageType('output.weight', [1000, 64], 'q4_0', true)).toBe(GgmlType.Q8_0);
    expect(storageType('token_embd.weight', [1000, 256], 'q4_0', true)).toBe(GgmlType.Q4_0);
    expect(storageType('token_embd.weight', [1000, 256], 'q4_0', false)).toBe(GgmlType.Q6_K);
    expect(storageType('output.weight', [1000, 256], 'q8_0', true)).toBe(GgmlType.Q8_0);
  });
});

describe('model variants', () => {
  it('Mistral with linear RoPE scaling, in shards without an index, converts to a llama file kiln runs', async () => {
    const dir = modelDir({ architecture: 'MistralForCausalLM', shards: 2, ropeScaling: { type: 'linear', factor: 4 } });
    rmSync(join(dir, 'model.safetensors.index.json'));
    const out = join(dir, 'out.gguf');
    await convertHfModel(dir, out, { type: 'q8_0' });
    const md = openGguf(out).file.metadata;
    expect([md.get('general.architecture'), md.get('llama.rope.scaling.type'), md.get('llama.rope.scaling.factor')]).toEqual(['llama', 'linear', 4]);
    expect(md.get('tokenizer.ggml.pre')).toBe('gpt-2');
    const rt = await Runtime.load({ model: out, threads: 1 });
    try {
      const logits = await rt.evaluate(rt.tokenize('the theme'));
      expect(logits.every(Number.isFinite)).toBe(true);
    } finally {
      await rt.close();
    }
  });

  it('keeps lm_head when config.json does not say the embeddings are tied (the families\' default)', async () => {
    const dir = modelDir({ tieWordEmbeddings: false }, undefined, (m) => { delete m.config['tie_word_embeddings']; });
    await convertHfModel(dir, join(dir, 'out.gguf'));
    expect(openGguf(join(dir, 'out.gguf')).file.tensors.map((t) => t.name)).toContain('output.weight');
  });

  it('Qwen2 with YaRN writes the scaling keys llama.cpp reads', async () => {
    const dir = modelDir({ architecture: 'Qwen2ForCausalLM', qkvBias: true, ropeScaling: { type: 'yarn', factor: 4, original_max_position_embeddings: 32768 } });
    await convertHfModel(dir, join(dir, 'out.gguf'));
    const md = openGguf(join(dir, 'out.gguf')).file.metadata;
    expect([md.get('qwen2.rope.scaling.type'), md.get('qwen2.rope.scaling.factor'), md.get('qwen2.rope.scaling.original_context_length')]).toEqual(['yarn', 4, 32768]);
  });

  it('a list of chat templates becomes the default plus named templates; chat_template.jinja serves when tokenizer_config.json has none', async () => {
    const listed = modelDir({}, { eos_token: '<|endoftext|>', chat_template: [{ name: 'default', template: 'D' }, { name: 'tool_use', template: 'T' }] });
    await convertHfModel(listed, join(listed, 'out.gguf'));
    const md = openGguf(join(listed, 'out.gguf')).file.metadata;
    expect([md.get('tokenizer.chat_template'), md.get('tokenizer.chat_template.tool_use'), md.get('tokenizer.chat_templates')]).toEqual(['D', 'T', ['tool_use']]);

    const file = modelDir({});
    writeFileSync(join(file, 'chat_template.jinja'), '{{ messages }}');
    await convertHfModel(file, join(file, 'out.gguf'));
    expect(openGguf(join(file, 'out.gguf')).file.metadata.get('tokenizer.chat_template')).toBe('{{ messages }}');
  });
});

describe('pre-tokenizer names', () => {
  // The Split patterns as each family's tokenizer.json writes them.
  const split = (regex: string) => ({ type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  ] });
  const cases: Array<[string, unknown]> = [
    ['llama-bpe', split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")],
    ['qwen2', split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")],
    ['tekken', split('[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+')],
    ['gpt-2', { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true }],
  ];
  it.each(cases)('a tokenizer.json outside the hash table is named %s by its pre-tokenizer regex', (pre, preTokenizer) => {
    const json = { ...byteLevelTokenizerJson(), pre_tokenizer: preTokenizer };
    expect(choosePreTokenizer(json, bpeVocabulary(json, null))).toMatchObject({ pre, by: 'pattern' });
  });
});

describe('special tokens', () => {
  const tokenizerJson = (post: unknown) => ({ ...byteLevelTokenizerJson(), post_processor: post, added_tokens: [
    { id: 259, content: '<|endoftext|>', special: true }, { id: 260, content: '<s>', special: true }, { id: 261, content: '</s>', special: true },
  ] });
  const template = (single: string[]) => ({ type: 'TemplateProcessing', single: single.map((t) => (t === 'A' ? { Sequence: { id: 'A', type_id: 0 } } : { SpecialToken: { id: t, type_id: 0 } })) });
  const sources = { config: {}, generationConfig: null, chatTemplateFile: null, nVocab: null };

  it('reads add_bos/add_eos from a TemplateProcessing post-processor; a trailing token that is not EOS becomes EOS and the old EOS EOT', () => {
    const special = readSpecialTokens({ ...sources, tokenizerJson: tokenizerJson(template(['<s>', 'A', '</s>'])), tokenizerConfig: { bos_token: '<s>', eos_token: '<|endoftext|>' } });
    expect(special.ids).toEqual({ bos: 260, eos: 261, eot: 259 });
    expect(special.add).toEqual({ bos: true, eos: true });
  });

  it('tokenizer_config.json flags win over the post-processor; config.json and generation_config.json fill what is left', () => {
    const special = readSpecialTokens({
      ...sources,
      tokenizerJson: tokenizerJson(template(['<s>', 'A'])),
      tokenizerConfig: { bos_token: { content: '<s>' }, add_bos_token: false, pad_token: '<|endoftext|>' },
      config: { bos_token_id: 1, eos_token_id: [7, 8] },
      generationConfig: { eos_token_id: [261, 259], unk_token_id: 300 },
    });
    expect(special.ids).toEqual({ bos: 260, pad: 259, eos: 261, unk: 300 });
    expect(special.add).toEqual({ bos: false });
  });
});

describe('kiln convert on the command line', () => {
  it('prints one summary line on a non-terminal stderr, and rejects bad arguments', async () => {
    const dir = modelDir({});
    const out = join(dir, 'cli.gguf');
    const lines: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      expect(await main(['convert', dir, out, '--type', 'q4_0'])).toBe(0);
      expect(await main(['convert', dir, out, '--type', 'q5_k'])).toBe(1);
      expect(await main(['convert', dir])).toBe(2);
    } finally {
      spy.mockRestore();
    }
    expect(lines[0]).toMatch(/^kiln convert: wrote .*cli\.gguf \(llama, q4_0, 11 tensors, [\d.]+ kB, tokenizer gpt2\/gpt-2 \(named by its regex\) with 260 tokens\) in [\d.]+ s\n$/);
    expect(lines[1]).toMatch(/--type must be one of f16, q8_0, q4_0, got 'q5_k'/);
    expect(lines[2]).toMatch(/^usage: kiln convert/);
    expect(lines).toHaveLength(3);
    expect(openGguf(out).file.metadata.get('general.file_type')).toBe(2);
  });

  it('draws the progress bar to the terminal width', () => {
    const line = progressLine({ bytesWritten: 50, totalBytes: 200, tensor: 'blk.0.ffn_up.weight', tensorIndex: 3, tensorCount: 9 }, 80);
    expect(line).toBe(`[${'#'.repeat(8)}${'.'.repeat(22)}]  25%  0.1 kB / 0.2 kB  blk.0.ffn_up.weight`);
    expect(progressLine({ bytesWritten: 1, totalBytes: 1, tensor: 'x', tensorIndex: 0, tensorCount: 1 }, 20)).toHaveLength(19);
  });
});
