// Crafted corrupt and hostile GGUF files: each gets its typed error, never a RangeError or a hang.
import { describe, expect, it } from 'vitest';
import { KilnError } from '../../src/errors.js';
import {
  GgufAlignmentError, GgufBadMagicError, GgufBadValueError, GgufBadValueTypeError, GgufDimensionError, GgufDuplicateError,
  GgufLimitError, GgufTensorOutOfBoundsError, GgufTensorOverlapError, GgufTruncatedError, GgufUnsupportedVersionError,
  UnsupportedTensorTypeError,
} from '../../src/gguf/errors.js';
import { GgmlType } from '../../src/gguf/ggml-type.js';
import { MAX_ARRAY_NESTING } from '../../src/gguf/limits.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GgufValueType as T } from '../../src/gguf/types.js';
import { writeGguf, type GgufWriteArray } from '../../src/gguf/writer.js';

/** Header: magic, version, 2 tensors, 6 keys; tensor_a at data offset 0 (64 bytes), tensor_b at 64 (16 bytes). */
function base(): Uint8Array {
  return writeGguf({
    metadata: [
      { key: 'general.architecture', type: T.STRING, value: 'llama' },
      { key: 'general.alignment', type: T.UINT32, value: 32 },
      { key: 'test.arr', type: T.ARRAY, elementType: T.INT32, value: [1, 2, 3] },
      { key: 'test.flag', type: T.BOOL, value: true },
      { key: 'test.key1', type: T.UINT8, value: 1 },
      { key: 'test.key2', type: T.UINT8, value: 2 },
    ],
    tensors: [
      { name: 'tensor_a', dims: [8, 2], type: GgmlType.F32, data: new Uint8Array(64) },
      { name: 'tensor_b', dims: [4], type: GgmlType.F32, data: new Uint8Array(16) },
    ],
  });
}

function find(bytes: Uint8Array, text: string): number {
  const at = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).indexOf(text);
  if (at < 0) throw new Error(`fixture lacks ${text}`);
  return at;
}

const u32 = (b: Uint8Array, at: number, v: number): void => new DataView(b.buffer, b.byteOffset).setUint32(at, v, true);
const u64 = (b: Uint8Array, at: number, v: bigint): void => new DataView(b.buffer, b.byteOffset).setBigUint64(at, v, true);

/** Where a key's value type and value start. */
function valueAt(b: Uint8Array, key: string): { type: number; value: number } {
  const at = find(b, key) + key.length;
  return { type: at, value: at + 4 };
}

/** Where a tensor info's fields are. */
function tensorAt(b: Uint8Array, name: string): { nDims: number; dim: (i: number) => number; type: number; offset: number } {
  const at = find(b, name) + name.length;
  const n = new DataView(b.buffer, b.byteOffset).getUint32(at, true);
  return { nDims: at, dim: (i) => at + 4 + 8 * i, type: at + 4 + 8 * n, offset: at + 8 + 8 * n };
}

function expectError<E extends KilnError>(bytes: Uint8Array, cls: new (...args: never[]) => E): E {
  let thrown: unknown;
  try {
    parseGguf(bytes);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(cls);
  expect(thrown).toBeInstanceOf(KilnError);
  const err = thrown as E;
  expect(err.status).toBe(500);
  expect(err.code).toMatch(/^[a-z_]+$/);
  return err;
}

function patched(edit: (b: Uint8Array) => void): Uint8Array {
  const b = base();
  edit(b);
  return b;
}

describe('GGUF reader on corrupt files', () => {
  it('parses the untouched fixture', () => {
    const file = parseGguf(base());
    expect(file.tensors.map((t) => [t.name, t.offset, t.byteSize])).toEqual([['tensor_a', 0, 64], ['tensor_b', 64, 16]]);
  });

  it('reports a truncation at every byte of the header, and an out-of-bounds tensor inside the data', () => {
    const b = base();
    const { dataOffset } = parseGguf(b);
    const sections = new Set<string>();
    for (let cut = 0; cut < b.length; cut++) {
      const prefix = b.subarray(0, cut);
      if (cut < dataOffset) sections.add(expectError(prefix, GgufTruncatedError).section.replace(/ #\d+| of ".*"/, ''));
      else if (cut < dataOffset + 80) expectError(prefix, GgufTensorOutOfBoundsError);
      // Past tensor_b's last byte only the trailing padding is missing, which readers allow.
      else expect(parseGguf(prefix).tensors).toHaveLength(2);
    }
    expect([...sections].sort()).toEqual(['header', 'metadata key', 'metadata value', 'padding before the tensor data', 'tensor info', 'tensor infos']);
  });

  it('names the section and offset of a truncation', () => {
    const b = base();
    const at = valueAt(b, 'test.arr').value + 4 + 8 + 2; // inside the second int32
    const err = expectError(b.subarray(0, at), GgufTruncatedError);
    expect(err.section).toBe('metadata value of "test.arr"');
    expect(err.message).toContain('metadata value of "test.arr"');
    expect(err.offset).toBe(at - 2);
  });

  it('rejects bad magic and unsupported versions', () => {
    expect(expectError(patched((b) => b.set([0x47, 0x47, 0x4d, 0x4c], 0)), GgufBadMagicError).message).toContain('GGML');
    expectError(new TextEncoder().encode('{"not": "gguf"}'), GgufBadMagicError);
    expectError(new Uint8Array([0x47, 0x47, 0x55]), GgufTruncatedError);
    expectError(new Uint8Array(0), GgufTruncatedError);
    expect(expectError(patched((b) => u32(b, 4, 1)), GgufUnsupportedVersionError).version).toBe(1);
    expectError(patched((b) => u32(b, 4, 4)), GgufUnsupportedVersionError);
    expectError(patched((b) => u32(b, 4, 0)), GgufUnsupportedVersionError);
    const bigEndian = expectError(patched((b) => b.set([0, 0, 0, 3], 4)), GgufUnsupportedVersionError);
    expect(bigEndian.message).toContain('big-endian');
  });

  it('rejects counts beyond their limits before allocating, and counts beyond the file as truncation', () => {
    expect(expectError(patched((b) => u64(b, 8, 1n << 40n)), GgufLimitError).limit).toBe('MAX_TENSORS');
    expect(expectError(patched((b) => u64(b, 16, 1n << 62n)), GgufLimitError).limit).toBe('MAX_KV');
    expect(expectError(patched((b) => u64(b, 16, 0xffffffffffffffffn)), GgufLimitError).limit).toBe('MAX_KV');
    expectError(patched((b) => u64(b, 8, 60_000n)), GgufTruncatedError);
    expectError(patched((b) => u64(b, 16, 60_000n)), GgufTruncatedError);
  });

  it('rejects huge string and array lengths', () => {
    expect(expectError(patched((b) => u64(b, 24, 1n << 40n)), GgufLimitError).limit).toBe('MAX_KEY_BYTES');
    expectError(patched((b) => u64(b, 24, 60_000n)), GgufTruncatedError);
    const str = (b: Uint8Array) => valueAt(b, 'general.architecture').value;
    const limit = expectError(patched((b) => u64(b, str(b), 1n << 33n)), GgufLimitError);
    expect([limit.limit, limit.value]).toEqual(['MAX_STRING_BYTES', 1n << 33n]);
    expect(limit.message).toContain('general.architecture');
    expectError(patched((b) => u64(b, str(b), 1_000_000n)), GgufTruncatedError);
    const arr = (b: Uint8Array) => valueAt(b, 'test.arr').value + 4;
    expect(expectError(patched((b) => u64(b, arr(b), 1n << 30n)), GgufLimitError).limit).toBe('MAX_ARRAY_ELEMENTS');
    expectError(patched((b) => u64(b, arr(b), 1_000_000n)), GgufTruncatedError);
  });

  it('rejects unknown value types and bools that are not 0 or 1', () => {
    expect(expectError(patched((b) => u32(b, valueAt(b, 'test.flag').type, 13)), GgufBadValueTypeError).valueType).toBe(13);
    expectError(patched((b) => u32(b, valueAt(b, 'test.arr').value, 0xffffffff)), GgufBadValueTypeError);
    expectError(patched((b) => { b[valueAt(b, 'test.flag').value] = 2; }), GgufBadValueError);
  });

  it('bounds array nesting', () => {
    let nested: GgufWriteArray = { type: T.ARRAY, elementType: T.UINT8, value: [1] };
    for (let i = 0; i < MAX_ARRAY_NESTING; i++) nested = { type: T.ARRAY, elementType: T.ARRAY, value: [nested] };
    const err = expectError(writeGguf({ metadata: [{ key: 'deep', ...nested }] }), GgufLimitError);
    expect(err.limit).toBe('MAX_ARRAY_NESTING');
    const ok = writeGguf({ metadata: [{ key: 'deep', ...(nested.value[0] as GgufWriteArray) }] });
    expect(() => parseGguf(ok)).not.toThrow();
  });

  it('rejects duplicate keys and tensor names', () => {
    const key = expectError(patched((b) => { b[find(b, 'test.key2') + 8] = '1'.charCodeAt(0); }), GgufDuplicateError);
    expect([key.kind, key.duplicate]).toEqual(['metadata key', 'test.key1']);
    const tensor = expectError(patched((b) => { b[find(b, 'tensor_b') + 7] = 'a'.charCodeAt(0); }), GgufDuplicateError);
    expect([tensor.kind, tensor.duplicate]).toEqual(['tensor name', 'tensor_a']);
  });

  it('rejects unknown tensor types, naming the tensor and the type id', () => {
    const err = expectError(patched((b) => u32(b, tensorAt(b, 'tensor_b').type, 99)), UnsupportedTensorTypeError);
    expect([err.tensor, err.tensorType]).toEqual(['tensor_b', 99]);
    expect(err.message).toContain('tensor_b');
    expect(err.message).toContain('99');
  });

  it('rejects bad dimensions', () => {
    for (const n of [0, 5, 0xffffffff]) {
      expect(expectError(patched((b) => u32(b, tensorAt(b, 'tensor_b').nDims, n)), GgufDimensionError).tensor).toBe('tensor_b');
    }
    expectError(patched((b) => u64(b, tensorAt(b, 'tensor_a').dim(1), 0n)), GgufDimensionError);
    expectError(patched((b) => u64(b, tensorAt(b, 'tensor_a').dim(0), 1n << 60n)), GgufDimensionError);
    const overflow = expectError(patched((b) => {
      const t = tensorAt(b, 'tensor_a');
      u64(b, t.dim(0), 1n << 40n);
      u64(b, t.dim(1), 1n << 40n);
    }), GgufDimensionError);
    expect(overflow.message).toContain('elements');
    // F32 -> Q8_0 leaves a 4-wide row, not a multiple of Q8_0's 32-element blocks.
    const block = expectError(patched((b) => u32(b, tensorAt(b, 'tensor_b').type, GgmlType.Q8_0)), GgufDimensionError);
    expect(block.message).toContain('block size 32');
  });

  it('rejects misaligned, out-of-range and overlapping tensor data', () => {
    const at = (b: Uint8Array) => tensorAt(b, 'tensor_b').offset;
    expectError(patched((b) => u64(b, at(b), 72n)), GgufAlignmentError);
    expectError(patched((b) => u64(b, at(b), 96n)), GgufTensorOutOfBoundsError);
    expectError(patched((b) => u64(b, at(b), 1n << 63n)), GgufTensorOutOfBoundsError);
    expectError(patched((b) => u64(b, at(b), 0xffffffffffffffe0n)), GgufTensorOutOfBoundsError);
    const overlap = expectError(patched((b) => u64(b, at(b), 32n)), GgufTensorOverlapError);
    expect([overlap.tensor, overlap.other]).toEqual(['tensor_b', 'tensor_a']);
    // A tensor that grows into its neighbour (tensor_a [8, 2] -> [8, 3]) overlaps too.
    expectError(patched((b) => u64(b, tensorAt(b, 'tensor_a').dim(1), 3n)), GgufTensorOverlapError);
  });

  it('rejects bad alignment values', () => {
    const at = (b: Uint8Array) => valueAt(b, 'general.alignment');
    for (const a of [0, 3, 48, 1 << 20]) {
      expect(expectError(patched((b) => u32(b, at(b).value, a)), GgufAlignmentError).message).toContain(String(a));
    }
    expect(expectError(patched((b) => u32(b, at(b).type, T.INT32)), GgufAlignmentError).message).toContain('uint32');
  });
});
