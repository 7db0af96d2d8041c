// The reader on the shared model files. Every expected value below was read with gguf-py 0.19.0
// (llama.cpp's own Python reader), not with kiln's parser.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GgufValueType as T, type GgufFile } from '../../src/gguf/types.js';
import { MODELS } from '../helpers/paths.js';

const load = (name: string): GgufFile => parseGguf(readFileSync(join(MODELS, name)));
const tensor = (file: GgufFile, name: string) => file.tensors.find((t) => t.name === name)!;
const totals = (file: GgufFile) => ({
  params: file.tensors.reduce((n, t) => n + t.dims.reduce((a, b) => a * b, 1), 0),
  bytes: file.tensors.reduce((n, t) => n + t.byteSize, 0),
});

describe.skipIf(!existsSync(MODELS))(`GGUF reader on ${MODELS}`, () => {
  it('stories260K.gguf', () => {
    const f = load('stories260K.gguf');
    expect([f.version, f.tensors.length, f.metadata.size, f.alignment, f.dataOffset, f.fileSize]).toEqual([3, 48, 24, 32, 14368, 1185568]);
    expect(f.metadata.get('general.architecture')).toBe('llama');
    expect(f.metadata.get('general.name')).toBe('stories260K.ref');
    expect(f.metadata.get('llama.feed_forward_length')).toBe(172);
    expect(f.metadata.get('llama.rope.freq_base')).toBe(10000);
    expect(f.metadata.get('llama.attention.layer_norm_rms_epsilon')).toBe(Math.fround(1e-5));
    expect(f.metadata.get('tokenizer.ggml.add_space_prefix')).toBe(true);
    const tokens = f.metadata.get('tokenizer.ggml.tokens') as string[];
    expect(tokens).toHaveLength(512);
    expect([tokens[0], tokens[1], tokens[2], tokens[3], tokens[259], tokens[260], tokens[511]]).toEqual(['<unk>', '<s>', '</s>', '<0x00>', '▁t', 'he', '\u200a']);
    const scores = f.metadata.get('tokenizer.ggml.scores') as Float32Array;
    expect(scores).toBeInstanceOf(Float32Array);
    expect([scores[300], scores[511]]).toEqual([-41, -252]);
    const types = f.metadata.get('tokenizer.ggml.token_type') as Int32Array;
    expect([types[0], types[1], types[3], types[300]]).toEqual([2, 3, 6, 1]);
    expect(f.metadataTypes.get('tokenizer.ggml.token_type')).toEqual({ type: T.ARRAY, elementType: T.INT32 });
    expect(f.tensors[0]).toEqual({ name: 'token_embd.weight', dims: [64, 512], type: GgmlType.F32, offset: 0, byteSize: 131072 });
    expect(f.dataOffset + tensor(f, 'blk.0.attn_q.weight').offset).toBe(145696);
    expect(f.dataOffset + tensor(f, 'output.weight').offset).toBe(1054496);
    expect(totals(f)).toEqual({ params: 292800, bytes: 1171200 });
  });

  it('llama-2-tiny-random.gguf (written by other tooling, the full Llama 2 vocabulary)', () => {
    const f = load('llama-2-tiny-random.gguf');
    expect([f.version, f.tensors.length, f.metadata.size, f.dataOffset]).toEqual([3, 12, 18, 724416]);
    expect(f.metadata.get('general.name')).toBe('LLaMA v2');
    expect(f.metadata.get('llama.context_length')).toBe(4096);
    const tokens = f.metadata.get('tokenizer.ggml.tokens') as string[];
    expect(tokens).toHaveLength(32000);
    expect([tokens[259], tokens[260], tokens[29871], tokens[29889], tokens[31999]]).toEqual(['▁▁', '▁t', '▁', '.', '给']);
    const scores = f.metadata.get('tokenizer.ggml.scores') as Float32Array;
    expect([scores[259], scores[300], scores[31999]]).toEqual([-1e9, -41, -31740]);
    expect(f.tensors.map((t) => t.name).slice(0, 3)).toEqual(['token_embd.weight', 'blk.0.attn_q.weight', 'blk.0.attn_k.weight']);
    expect(tensor(f, 'token_embd.weight')).toMatchObject({ dims: [8, 32000], type: GgmlType.F16, byteSize: 512000 });
    expect(tensor(f, 'output_norm.weight')).toMatchObject({ dims: [8], type: GgmlType.F32 });
    expect(f.dataOffset + tensor(f, 'output.weight').offset).toBe(1238560);
    expect(totals(f)).toEqual({ params: 513048, bytes: 1026144 });
  });

  it('tiny-llama-q4_0.gguf and tiny-llama-q8_0.gguf', () => {
    const q4 = load('tiny-llama-q4_0.gguf');
    expect([q4.tensors.length, q4.dataOffset, q4.metadata.get('general.file_type')]).toEqual([21, 21376, 2]);
    expect(tensor(q4, 'token_embd.weight')).toMatchObject({ dims: [256, 1000], type: GgmlType.Q4_0, byteSize: 144000 });
    expect(q4.dataOffset + tensor(q4, 'output.weight').offset).toBe(1055232);
    expect(totals(q4)).toEqual({ params: 2086144, bytes: 1177856 });
    const q8 = load('tiny-llama-q8_0.gguf');
    expect(tensor(q8, 'blk.0.attn_q.weight')).toMatchObject({ dims: [256, 256], type: GgmlType.Q8_0, byteSize: 69632 });
    expect(totals(q8)).toEqual({ params: 2086144, bytes: 2220288 });
    expect((q8.metadata.get('tokenizer.ggml.tokens') as string[])[999]).toBe('wv');
  });

  it('tiny-qwen2-f16.gguf and tiny-qwen3-q8_0.gguf', () => {
    const q2 = load('tiny-qwen2-f16.gguf');
    expect([q2.tensors.length, q2.dataOffset, q2.metadata.get('general.architecture')]).toEqual([26, 53120, 'qwen2']);
    expect(q2.metadata.get('qwen2.rope.freq_base')).toBe(1e6);
    expect(q2.metadata.get('tokenizer.ggml.pre')).toBe('qwen2');
    const merges = q2.metadata.get('tokenizer.ggml.merges') as string[];
    expect([merges.length, merges[0], merges[1740]]).toEqual([1741, 'Ġ a', 'an y']);
    expect((q2.metadata.get('tokenizer.ggml.tokens') as string[])[1999]).toBe('<|im_end|>');
    expect(totals(q2)).toEqual({ params: 2087168, bytes: 4178944 });
    const q3 = load('tiny-qwen3-q8_0.gguf');
    expect([q3.tensors.length, q3.dataOffset, q3.metadata.get('qwen3.attention.key_length')]).toEqual([24, 53152, 64]);
    expect(q3.tensors.map((t) => t.name)).toContain('blk.0.attn_q_norm.weight');
    expect(totals(q3)).toEqual({ params: 2086400, bytes: 2221312 });
  });
});
