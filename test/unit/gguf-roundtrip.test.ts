// writeGguf -> parseGguf keeps every value type, byte for byte, and places tensors where it says.
import { describe, expect, it } from 'vitest';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GgufValueType as T } from '../../src/gguf/types.js';
import { writeGguf, type GgufWriteSpec } from '../../src/gguf/writer.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { prng } from '../helpers/prng.js';

const f32 = (values: number[]): Uint8Array => new Uint8Array(new Float32Array(values).buffer);

describe('GGUF write -> parse', () => {
  it('keeps every scalar type', () => {
    const file = parseGguf(writeGguf({
      metadata: [
        { key: 'u8', type: T.UINT8, value: 255 },
        { key: 'i8', type: T.INT8, value: -128 },
        { key: 'u16', type: T.UINT16, value: 65535 },
        { key: 'i16', type: T.INT16, value: -32768 },
        { key: 'u32', type: T.UINT32, value: 0xffffffff },
        { key: 'i32', type: T.INT32, value: -0x80000000 },
        { key: 'f32', type: T.FLOAT32, value: 1e-5 },
        { key: 'f64', type: T.FLOAT64, value: Math.PI },
        { key: 'true', type: T.BOOL, value: true },
        { key: 'false', type: T.BOOL, value: false },
        { key: 'str', type: T.STRING, value: 'héllo ▁世界 🙂' },
        { key: 'empty', type: T.STRING, value: '' },
        { key: 'bom', type: T.STRING, value: '\uFEFFbom' },
        { key: 'u64.small', type: T.UINT64, value: 2n ** 53n - 1n },
        { key: 'u64.big', type: T.UINT64, value: 2n ** 64n - 1n },
        { key: 'i64.small', type: T.INT64, value: -(2 ** 53) + 1 },
        { key: 'i64.big', type: T.INT64, value: -(2n ** 63n) },
      ],
    }));
    const m = file.metadata;
    expect([m.get('u8'), m.get('i8'), m.get('u16'), m.get('i16'), m.get('u32'), m.get('i32')]).toEqual([255, -128, 65535, -32768, 0xffffffff, -0x80000000]);
    expect(m.get('f32')).toBe(Math.fround(1e-5));
    expect(m.get('f64')).toBe(Math.PI);
    expect([m.get('true'), m.get('false')]).toEqual([true, false]);
    expect(m.get('str')).toBe('héllo ▁世界 🙂');
    expect(m.get('empty')).toBe('');
    expect(m.get('bom')).toBe('\uFEFFbom');
    // Safe 64-bit integers come back as numbers, the rest as bigint.
    expect(m.get('u64.small')).toBe(2 ** 53 - 1);
    expect(m.get('u64.big')).toBe(2n ** 64n - 1n);
    expect(m.get('i64.small')).toBe(-(2 ** 53) + 1);
    expect(m.get('i64.big')).toBe(-(2n ** 63n));
    expect(file.metadataTypes.get('u64.big')).toEqual({ type: T.UINT64 });
    expect(file.metadataTypes.get('f32')).toEqual({ type: T.FLOAT32 });
  });

  it('keeps arrays of every element type, empty arrays and nested arrays', () => {
    const file = parseGguf(writeGguf({
      metadata: [
        { key: 'a.u8', type: T.ARRAY, elementType: T.UINT8, value: [0, 255] },
        { key: 'a.i8', type: T.ARRAY, elementType: T.INT8, value: [-1, 1] },
        { key: 'a.u16', type: T.ARRAY, elementType: T.UINT16, value: [1, 65535] },
        { key: 'a.i16', type: T.ARRAY, elementType: T.INT16, value: [-2, 2] },
        { key: 'a.u32', type: T.ARRAY, elementType: T.UINT32, value: [3, 0xffffffff] },
        { key: 'a.i32', type: T.ARRAY, elementType: T.INT32, value: [-3, 3] },
        { key: 'a.f32', type: T.ARRAY, elementType: T.FLOAT32, value: [0.5, -1000] },
        { key: 'a.f64', type: T.ARRAY, elementType: T.FLOAT64, value: [Math.E] },
        { key: 'a.u64', type: T.ARRAY, elementType: T.UINT64, value: [1n, 2n ** 64n - 1n] },
        { key: 'a.i64', type: T.ARRAY, elementType: T.INT64, value: [-1n, 2n ** 63n - 1n] },
        { key: 'a.bool', type: T.ARRAY, elementType: T.BOOL, value: [true, false, true] },
        { key: 'a.str', type: T.ARRAY, elementType: T.STRING, value: ['<unk>', '', '\uFEFF', '▁the'] },
        { key: 'a.empty', type: T.ARRAY, elementType: T.STRING, value: [] },
        { key: 'a.empty.f32', type: T.ARRAY, elementType: T.FLOAT32, value: [] },
        {
          key: 'a.nested', type: T.ARRAY, elementType: T.ARRAY, value: [
            { type: T.ARRAY, elementType: T.INT32, value: [1, 2] },
            { type: T.ARRAY, elementType: T.STRING, value: ['x'] },
            { type: T.ARRAY, elementType: T.ARRAY, value: [{ type: T.ARRAY, elementType: T.BOOL, value: [false] }] },
            { type: T.ARRAY, elementType: T.UINT8, value: [] },
          ],
        },
      ],
    }));
    const m = file.metadata;
    expect(m.get('a.u8')).toEqual(new Uint8Array([0, 255]));
    expect(m.get('a.i8')).toEqual(new Int8Array([-1, 1]));
    expect(m.get('a.u16')).toEqual(new Uint16Array([1, 65535]));
    expect(m.get('a.i16')).toEqual(new Int16Array([-2, 2]));
    expect(m.get('a.u32')).toEqual(new Uint32Array([3, 0xffffffff]));
    expect(m.get('a.i32')).toEqual(new Int32Array([-3, 3]));
    expect(m.get('a.f32')).toEqual(new Float32Array([0.5, -1000]));
    expect(m.get('a.f64')).toEqual(new Float64Array([Math.E]));
    expect(m.get('a.u64')).toEqual(new BigUint64Array([1n, 2n ** 64n - 1n]));
    expect(m.get('a.i64')).toEqual(new BigInt64Array([-1n, 2n ** 63n - 1n]));
    expect(m.get('a.bool')).toEqual([true, false, true]);
    expect(m.get('a.str')).toEqual(['<unk>', '', '\uFEFF', '▁the']);
    expect(m.get('a.empty')).toEqual([]);
    expect(m.get('a.empty.f32')).toEqual(new Float32Array(0));
    expect(m.get('a.nested')).toEqual([new Int32Array([1, 2]), ['x'], [[false]], new Uint8Array(0)]);
    expect(file.metadataTypes.get('a.str')).toEqual({ type: T.ARRAY, elementType: T.STRING });
    expect(file.metadataTypes.get('a.nested')).toEqual({ type: T.ARRAY, elementType: T.ARRAY });
  });

  it('views numeric arrays in place when aligned and copies them when not', () => {
    // The key length moves the array's elements: 'k' puts the f32 data at an odd offset.
    for (const key of ['k', 'kk', 'kkk', 'kkkk']) {
      const bytes = writeGguf({ metadata: [{ key, type: T.ARRAY, elementType: T.FLOAT32, value: [1, 2, 3] }] });
      const value = parseGguf(bytes).metadata.get(key) as Float32Array;
      expect(Array.from(value)).toEqual([1, 2, 3]);
      const aligned = (24 + 8 + key.length + 4 + 4 + 8) % 4 === 0;
      expect(value.buffer === bytes.buffer).toBe(aligned);
    }
  });

  it('decodes strings exactly as TextDecoder with ignoreBOM does, invalid UTF-8 included', () => {
    const rng = prng(7);
    const pool = [0xef, 0xbb, 0xbf, 0xe2, 0x96, 0x81, 0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0xc0, 0xc2, 0xf4, 0x90, 0x80, 0xbf, 0xff, 0x41];
    const strings = Array.from({ length: 5000 }, () => Uint8Array.from({ length: rng.int(9) }, () => (rng.next() < 0.3 ? rng.int(256) : rng.pick(pool))));
    const file = parseGguf(writeGguf({ metadata: [{ key: 's', type: T.ARRAY, elementType: T.STRING, value: strings }] }));
    const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
    expect(file.metadata.get('s')).toEqual(strings.map((b) => decoder.decode(b)));
  });

  it('honours general.alignment for the data section and each tensor', () => {
    const a = f32([1, 2, 3]);
    const b = f32([4, 5, 6, 7, 8]);
    for (const alignment of [1, 32, 64, 4096]) {
      const bytes = writeGguf({
        metadata: [{ key: 'general.alignment', type: T.UINT32, value: alignment }],
        tensors: [
          { name: 'a', dims: [3], type: GgmlType.F32, data: a },
          { name: 'b', dims: [5], type: GgmlType.F32, data: b },
        ],
      });
      const file = parseGguf(bytes);
      expect(file.alignment).toBe(alignment);
      expect(file.dataOffset % alignment).toBe(0);
      expect(file.tensors.map((t) => [t.name, t.offset % alignment, t.byteSize])).toEqual([['a', 0, 12], ['b', 0, 20]]);
      for (const [t, data] of [[file.tensors[0]!, a], [file.tensors[1]!, b]] as const) {
        expect(bytes.subarray(file.dataOffset + t.offset, file.dataOffset + t.offset + t.byteSize)).toEqual(data);
      }
      expect(bytes.length % alignment).toBe(0);
    }
  });

  it('writes version 2 and quantized tensors with their block sizes', () => {
    const file = parseGguf(writeGguf({
      version: 2,
      tensors: [
        { name: 'q8', dims: [64, 3], type: GgmlType.Q8_0, data: new Uint8Array(2 * 3 * 34) },
        { name: 'q4k', dims: [256, 2, 1, 1], type: GgmlType.Q4_K, data: new Uint8Array(2 * 144) },
        // Not a weight type kiln runs: the reader parses it and the model layer decides.
        { name: 'q4_1', dims: [32], type: GgmlType.Q4_1, data: new Uint8Array(20) },
      ],
    }));
    expect(file.version).toBe(2);
    expect(file.tensors.map((t) => [t.name, t.dims, t.type, t.byteSize])).toEqual([
      ['q8', [64, 3], GgmlType.Q8_0, 204],
      ['q4k', [256, 2, 1, 1], GgmlType.Q4_K, 288],
      ['q4_1', [32], GgmlType.Q4_1, 20],
    ]);
  });

  it('refuses a spec that would make a broken file', () => {
    const bad: GgufWriteSpec[] = [
      { tensors: [{ name: 'x', dims: [4], type: GgmlType.F32, data: new Uint8Array(15) }] },
      { tensors: [{ name: 'x', dims: [16], type: GgmlType.Q8_0, data: new Uint8Array(17) }] },
      { tensors: [{ name: 'x', dims: [], type: GgmlType.F32, data: new Uint8Array(0) }] },
      { tensors: [{ name: 'x', dims: [1], type: 99 as GgmlType, data: new Uint8Array(4) }] },
      { tensors: [{ name: 'x', dims: [1], type: GgmlType.F32, data: f32([0]) }, { name: 'x', dims: [1], type: GgmlType.F32, data: f32([0]) }] },
      { metadata: [{ key: 'k', type: T.UINT8, value: 256 }] },
      { metadata: [{ key: 'k', type: T.INT32, value: 1.5 }] },
      { metadata: [{ key: 'k', type: T.UINT64, value: -1n }] },
      { metadata: [{ key: 'k', type: T.BOOL, value: true }, { key: 'k', type: T.BOOL, value: false }] },
      { metadata: [{ key: 'general.alignment', type: T.UINT32, value: 24 }] },
    ];
    for (const spec of bad) expect(() => writeGguf(spec)).toThrow(InvalidArgumentError);
  });
});
