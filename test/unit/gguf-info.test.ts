// `kiln info` output: arrays summarized, long strings cut, hostile strings escaped, tensor totals.
import { describe, expect, it } from 'vitest';
import { formatInfo } from '../../src/cli/info.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GgufValueType as T } from '../../src/gguf/types.js';
import { writeGguf } from '../../src/gguf/writer.js';

describe('formatInfo', () => {
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 31997 }, (_, i) => `t${i}`)];
  const text = formatInfo(parseGguf(writeGguf({
    metadata: [
      { key: 'general.architecture', type: T.STRING, value: 'llama' },
      { key: 'llama.attention.layer_norm_rms_epsilon', type: T.FLOAT32, value: 1e-5 },
      { key: 'tokenizer.ggml.tokens', type: T.ARRAY, elementType: T.STRING, value: tokens },
      { key: 'tokenizer.ggml.scores', type: T.ARRAY, elementType: T.FLOAT32, value: [0, -1.5, 2] },
      { key: 'tokenizer.chat_template', type: T.STRING, value: 'x'.repeat(500) },
      { key: 'evil', type: T.STRING, value: 'a\u001b[31mred\u009b\u202egnp' },
      { key: 'nested', type: T.ARRAY, elementType: T.ARRAY, value: [{ type: T.ARRAY, elementType: T.INT32, value: [1, 2] }] },
      { key: 'big', type: T.UINT64, value: 2n ** 64n - 1n },
    ],
    tensors: Array.from({ length: 12 }, (_, i) => ({
      name: `blk.${i}.w`, dims: [32, 2], type: i % 2 ? GgmlType.Q8_0 : GgmlType.F32, data: new Uint8Array(i % 2 ? 68 : 256),
    })),
  })));

  it('summarizes long arrays and shows short ones whole', () => {
    expect(text).toContain('[32000 strings: "<unk>", "<s>", "</s>", ...]');
    expect(text).toContain('[3 float32: 0, -1.5, 2]');
    expect(text).toContain('[1 arrays: [2 int32: 1, 2]]');
  });

  it('prints scalars readably and cuts long strings', () => {
    expect(text).toMatch(/general\.architecture\s+string\s+"llama"/);
    expect(text).toMatch(/layer_norm_rms_epsilon\s+float32\s+0\.00001/);
    expect(text).toMatch(/big\s+uint64\s+18446744073709551615/);
    expect(text).toContain(`"${'x'.repeat(80)}..." (500 chars)`);
  });

  it('escapes terminal control and bidi characters from the file', () => {
    expect(text).toContain('"a\\u001b[31mred\\u009b\\u202egnp"');
    expect(text).not.toMatch(/[\u001b\u009b\u202e]/);
  });

  it('sums tensors by type and lists the first and last few', () => {
    expect(text).toContain('tensors: 12, 768 params, 1,944 bytes');
    expect(text).toMatch(/f32\s+6 tensors\s+384 params\s+1,536 bytes/);
    expect(text).toMatch(/q8_0\s+6 tensors\s+384 params\s+408 bytes/);
    expect(text).toMatch(/blk\.0\.w\s+f32\s+\[32, 2\]/);
    expect(text).toContain('... 4 more');
    expect(text).toMatch(/blk\.11\.w\s+q8_0\s+\[32, 2\]/);
    expect(text).not.toContain('blk.5.w');
  });
});
