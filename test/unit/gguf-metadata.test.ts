// Typed metadata accessors: the right value, or a GgufMetadataError naming key, wanted and found.
import { describe, expect, it } from 'vitest';
import { GgufMetadataError } from '../../src/gguf/errors.js';
import {
  describeValueType, getArray, getBool, getCount, getNumber, getNumericArray, getOptionalBool, getOptionalCount,
  getOptionalNumber, getOptionalNumericArray, getOptionalString, getOptionalStringArray, getString, getStringArray,
} from '../../src/gguf/metadata.js';
import { parseGguf } from '../../src/gguf/reader.js';
import { GgufValueType as T } from '../../src/gguf/types.js';
import { writeGguf } from '../../src/gguf/writer.js';

const file = parseGguf(writeGguf({
  metadata: [
    { key: 'arch', type: T.STRING, value: 'llama' },
    { key: 'ctx', type: T.UINT32, value: 4096 },
    { key: 'eps', type: T.FLOAT32, value: 0.5 },
    { key: 'neg', type: T.INT32, value: -1 },
    { key: 'huge', type: T.UINT64, value: 2n ** 60n },
    { key: 'flag', type: T.BOOL, value: true },
    { key: 'tokens', type: T.ARRAY, elementType: T.STRING, value: ['a', 'b'] },
    { key: 'scores', type: T.ARRAY, elementType: T.FLOAT32, value: [1, 2] },
  ],
}));

function metadataError(fn: () => unknown): GgufMetadataError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GgufMetadataError);
    return err as GgufMetadataError;
  }
  throw new Error('expected a GgufMetadataError');
}

describe('GGUF metadata accessors', () => {
  it('returns values of the wanted type', () => {
    expect(getString(file, 'arch')).toBe('llama');
    expect(getNumber(file, 'ctx')).toBe(4096);
    expect(getNumber(file, 'eps')).toBe(0.5);
    expect(getCount(file, 'ctx')).toBe(4096);
    expect(getBool(file, 'flag')).toBe(true);
    expect(getStringArray(file, 'tokens')).toEqual(['a', 'b']);
    expect(getNumericArray(file, 'scores')).toEqual(new Float32Array([1, 2]));
    expect(getArray(file, 'tokens')).toEqual(['a', 'b']);
    expect(getArray(file, 'scores')).toEqual(new Float32Array([1, 2]));
  });

  it('returns undefined for a missing optional key', () => {
    for (const get of [getOptionalString, getOptionalNumber, getOptionalCount, getOptionalBool, getOptionalStringArray, getOptionalNumericArray]) {
      expect(get(file, 'absent')).toBeUndefined();
    }
  });

  it('names the key, the expected type and the found type', () => {
    const missing = metadataError(() => getNumber(file, 'llama.block_count'));
    expect([missing.key, missing.expected, missing.found]).toEqual(['llama.block_count', 'number', 'missing']);
    expect(missing.message).toContain('llama.block_count');
    const wrong = metadataError(() => getString(file, 'ctx'));
    expect([wrong.expected, wrong.found]).toEqual(['string', 'uint32']);
    expect(metadataError(() => getNumber(file, 'huge')).found).toBe(`uint64 ${2n ** 60n} (beyond 2^53)`);
    expect(metadataError(() => getCount(file, 'neg')).found).toBe('-1');
    expect(metadataError(() => getCount(file, 'eps')).found).toBe('0.5');
    expect(metadataError(() => getStringArray(file, 'scores')).found).toBe('array of float32');
    expect(metadataError(() => getNumericArray(file, 'tokens')).found).toBe('array of string');
    expect(metadataError(() => getArray(file, 'flag')).found).toBe('bool');
    expect(metadataError(() => getOptionalBool(file, 'arch')).found).toBe('string');
  });

  it('describes stored types', () => {
    expect(['arch', 'huge', 'tokens', 'absent'].map((k) => describeValueType(file, k))).toEqual(['string', 'uint64', 'array of string', 'missing']);
  });
});
