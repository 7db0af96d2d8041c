// `kiln convert` on broken and hostile input: crafted safetensors headers (lengths, dtypes, shapes,
// offsets), missing files, unsupported architectures and tokenizers, weights that disagree with
// config.json. Each gets its typed error naming the file, and no partial output is left behind.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { convertHfModel } from '../../src/convert/convert-model.js';
import {
  ConvertOutputError, HfModelFileMissingError, HfModelFormatError, HfUnsupportedArchitectureError, SafetensorsFormatError,
} from '../../src/convert/errors.js';
import { MAX_SAFETENSORS_HEADER_BYTES } from '../../src/convert/limits.js';
import { parseSafetensors } from '../../src/convert/safetensors.js';
import { UnsupportedTokenizerError } from '../../src/tokenizer/errors.js';
import { byteLevelTokenizerJson, randomHfModel, safetensorsBytes, writeHfModel, type HfModel, type HfModelSpec } from '../helpers/hf-model.js';

const TINY: HfModelSpec = {
  architecture: 'LlamaForCausalLM', hidden: 32, layers: 1, heads: 2, kvHeads: 1, ffn: 64, vocab: 260,
  ropeTheta: 10000, rmsEps: 1e-5, tieWordEmbeddings: true, dtype: 'F32', seed: 3,
};

/** A safetensors file from a raw header value and `data` bytes. */
function rawSafetensors(header: unknown, data = new Uint8Array(0), headerLength?: bigint): Uint8Array {
  const json = header instanceof Uint8Array ? header : new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, headerLength ?? BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe('safetensors headers are bounds-checked', () => {
  const f32 = (shape: number[], offsets: [number, number]) => ({ dtype: 'F32', shape, data_offsets: offsets });
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['a file shorter than the length field', new Uint8Array(5), /fewer than the 8/],
    ['a header length past the limit', rawSafetensors({}, new Uint8Array(0), BigInt(MAX_SAFETENSORS_HEADER_BYTES) + 1n), /exceeds the 100000000-byte limit/],
    ['a header length of 2^64 - 1', rawSafetensors({}, new Uint8Array(0), 0xffffffffffffffffn), /exceeds/],
    ['a header length past the end of the file', rawSafetensors({}, new Uint8Array(0), 1000n), /runs past the end/],
    ['a header that is not JSON', rawSafetensors('{"a": '), /not UTF-8 JSON/],
    ['a header that is not UTF-8', rawSafetensors(Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d)), /not UTF-8 JSON/],
    ['a header that is an array', rawSafetensors([1, 2]), /not a JSON object/],
    ['an entry that is not an object', rawSafetensors({ w: 5 }), /is not an object/],
    ['an unknown dtype', rawSafetensors({ w: { dtype: 'F128', shape: [1], data_offsets: [0, 16] } }, new Uint8Array(16)), /unknown dtype "F128"/],
    ['a negative dimension', rawSafetensors({ w: f32([-1], [0, 4]) }, new Uint8Array(4)), /non-negative integers/],
    ['a fractional dimension', rawSafetensors({ w: f32([1.5], [0, 4]) }, new Uint8Array(4)), /non-negative integers/],
    ['too many dimensions', rawSafetensors({ w: f32(Array(9).fill(1), [0, 4]) }, new Uint8Array(4)), /at most 8/],
    ['offsets that are not a pair', rawSafetensors({ w: { dtype: 'F32', shape: [1], data_offsets: [0] } }, new Uint8Array(4)), /data_offsets \[begin, end\]/],
    ['offsets past the data', rawSafetensors({ w: f32([4], [0, 16]) }, new Uint8Array(8)), /outside the 8 bytes/],
    ['begin after end', rawSafetensors({ w: f32([0], [8, 4]) }, new Uint8Array(8)), /outside/],
    ['a span that disagrees with the shape', rawSafetensors({ w: f32([3], [0, 8]) }, new Uint8Array(8)), /needs 12 bytes but its data_offsets span 8/],
    ['a shape whose product overflows', rawSafetensors({ w: f32([2 ** 40, 2 ** 40], [0, 8]) }, new Uint8Array(8)), /data_offsets span 8/],
    ['overlapping tensors', rawSafetensors({ a: f32([2], [0, 8]), b: f32([2], [4, 12]) }, new Uint8Array(12)), /overlaps/],
    ['a gap between tensors', rawSafetensors({ a: f32([1], [0, 4]), b: f32([1], [8, 12]) }, new Uint8Array(12)), /belong to no tensor/],
    ['trailing bytes no tensor covers', rawSafetensors({ a: f32([1], [0, 4]) }, new Uint8Array(12)), /cover 4 of the 12/],
  ];
  it.each(cases)('%s', (_, bytes, message) => {
    let error: unknown;
    try {
      parseSafetensors(bytes, 'x.safetensors');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SafetensorsFormatError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain('x.safetensors');
  });

  it('reads a valid file, zero-sized tensors and __metadata__ included', () => {
    const bytes = safetensorsBytes([
      { name: 'b', dtype: 'F16', shape: [2, 2], values: Float32Array.of(1, 2, 3, 4) },
      { name: 'empty', dtype: 'F32', shape: [0, 3], values: new Float32Array(0) },
      { name: 'a', dtype: 'F32', shape: [1], values: Float32Array.of(5) },
    ]);
    const tensors = parseSafetensors(bytes, 'ok.safetensors');
    expect(tensors.map((t) => [t.name, t.dtype, t.shape, t.data.length])).toEqual([['b', 'F16', [2, 2], 8], ['empty', 'F32', [0, 3], 0], ['a', 'F32', [1], 4]]);
  });
});

describe('model directories that cannot be converted', () => {
  const work = mkdtempSync(join(tmpdir(), 'kiln-convert-hostile-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  let n = 0;

  /** A tiny convertible model directory, changed by `edit` before it is written. */
  function modelDir(edit?: (model: HfModel) => void, tokenizerJson: unknown = byteLevelTokenizerJson()): string {
    const dir = join(work, `m${n++}`);
    const model = randomHfModel(TINY);
    edit?.(model);
    writeHfModel(dir, model, { tokenizerJson, tokenizerConfig: { eos_token: '<|endoftext|>' } });
    return dir;
  }

  async function convertError(dir: string): Promise<Error> {
    const out = join(dir, 'out.gguf');
    const error = await convertHfModel(dir, out).then(() => null, (err: Error) => err);
    expect(error, 'the conversion should fail').not.toBeNull();
    // Neither the output nor a partial file is left.
    expect(readdirSync(dir).filter((f) => f.startsWith('out.gguf'))).toEqual([]);
    return error!;
  }

  it('converts the unedited directory (the cases below each break one thing)', async () => {
    const dir = modelDir();
    await convertHfModel(dir, join(dir, 'out.gguf'));
    expect(existsSync(join(dir, 'out.gguf'))).toBe(true);
  });

  it('an output path in a folder that does not exist', async () => {
    const err = await convertHfModel(modelDir(), join(work, 'no', 'such', 'out.gguf')).catch((e: Error) => e);
    expect(err).toBeInstanceOf(ConvertOutputError);
    expect((err as Error).message).toMatch(/cannot write .*out\.gguf: ENOENT/);
  });

  it('a missing directory or config.json', async () => {
    expect(await convertHfModel(join(work, 'nowhere'), join(work, 'out.gguf')).catch((e) => e)).toBeInstanceOf(HfModelFileMissingError);
    const dir = modelDir();
    rmSync(join(dir, 'config.json'));
    const err = await convertError(dir);
    expect(err).toBeInstanceOf(HfModelFileMissingError);
    expect(err.message).toContain('config.json');
  });

  it('an architecture kiln does not convert', async () => {
    const err = await convertError(modelDir((m) => { m.config['architectures'] = ['MixtralForCausalLM']; }));
    expect(err).toBeInstanceOf(HfUnsupportedArchitectureError);
    expect(err.message).toMatch(/"MixtralForCausalLM".*LlamaForCausalLM.*Qwen3ForCausalLM/);
  });

  it('hyperparameters of the wrong kind', async () => {
    expect((await convertError(modelDir((m) => { m.config['hidden_size'] = '32'; }))).message).toMatch(/hidden_size should be an integer/);
    expect((await convertError(modelDir((m) => { m.config['num_key_value_heads'] = 3; }))).message).toMatch(/num_key_value_heads/);
    expect((await convertError(modelDir((m) => { m.config['rope_scaling'] = { rope_type: 'dynamic', factor: 2 }; }))).message).toMatch(/rope scaling type "dynamic"/);
  });

  it('weights only as PyTorch .bin files, or none at all', async () => {
    const dir = modelDir();
    rmSync(join(dir, 'model.safetensors'));
    expect((await convertError(dir)).message).toMatch(/no model\*\.safetensors/);
    writeFileSync(join(dir, 'pytorch_model.bin'), 'x');
    const err = await convertError(dir);
    expect(err).toBeInstanceOf(HfModelFileMissingError);
    expect(err.message).toMatch(/PyTorch \.bin/);
  });

  it('a truncated safetensors file', async () => {
    const dir = modelDir();
    writeFileSync(join(dir, 'model.safetensors'), safetensorsBytes([{ name: 'x', dtype: 'F32', shape: [4], values: new Float32Array(4) }]).subarray(0, 40));
    expect(await convertError(dir)).toBeInstanceOf(SafetensorsFormatError);
  });

  it('an index that points outside the directory or does not match the shards', async () => {
    const dir = modelDir();
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { 'model.norm.weight': '../../etc/passwd.safetensors' } }));
    expect((await convertError(dir)).message).toMatch(/not a \.safetensors file name in the model directory/);
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { 'model.norm.weight': 'model.safetensors' } }));
    expect((await convertError(dir)).message).toMatch(/does not match the shards/);
  });

  it('tensors missing, misshapen, of an unknown name, or quantized', async () => {
    const missing = await convertError(modelDir((m) => m.weights.delete('model.layers.0.mlp.up_proj.weight')));
    expect(missing).toBeInstanceOf(HfModelFormatError);
    expect(missing.message).toMatch(/no tensor for blk\.0\.ffn_up\.weight \(model\.layers\.0\.mlp\.up_proj\.weight\)/);
    const shape = await convertError(modelDir((m) => { m.weights.get('model.layers.0.self_attn.k_proj.weight')!.shape = [32, 16]; }));
    expect(shape.message).toMatch(/k_proj\.weight has shape \[32, 16\].*\[16, 32\]/);
    const unknown = await convertError(modelDir((m) => m.weights.set('model.layers.0.mlp.experts.0.w1.weight', { shape: [1], values: new Float32Array(1) })));
    expect(unknown.message).toMatch(/has no place in a llama/);
    const layer = await convertError(modelDir((m) => m.weights.set('model.layers.7.input_layernorm.weight', { shape: [32], values: new Float32Array(32) })));
    expect(layer.message).toMatch(/layer 7, but config\.json has 1 layers/);
    const dir = modelDir();
    writeFileSync(join(dir, 'model.safetensors'), rawSafetensors({ 'model.embed_tokens.weight': { dtype: 'I32', shape: [260, 32], data_offsets: [0, 260 * 32 * 4] } }, new Uint8Array(260 * 32 * 4)));
    expect((await convertError(dir)).message).toMatch(/stored as I32/);
  });

  it('no tokenizer, or tokenizers kiln cannot convert', async () => {
    const dir = modelDir();
    rmSync(join(dir, 'tokenizer.json'));
    expect((await convertError(dir)).message).toMatch(/tokenizer\.json: does not exist, and neither does tokenizer\.model/);
    const fallback = byteLevelTokenizerJson();
    fallback.model.byte_fallback = true;
    expect(await convertError(modelDir(undefined, fallback))).toBeInstanceOf(UnsupportedTokenizerError);
    const unknownPre = { ...byteLevelTokenizerJson(), pre_tokenizer: { type: 'Whitespace' } };
    expect((await convertError(modelDir(undefined, unknownPre))).message).toMatch(/pre-tokenizer is not one kiln implements \(chkhsh [0-9a-f]{64}/);
    expect((await convertError(modelDir(undefined, { model: { type: 'Unigram', vocab: [] } }))).message).toMatch(/"Unigram" model/);
  });
});
