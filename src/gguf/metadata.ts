// Typed reads of GGUF metadata: a missing key or a value of another type is a GgufMetadataError
// naming the key, the type wanted and the type found, never an undefined deep in a model builder.
import { GgufMetadataError } from './errors.js';
import { GgufValueType, type GgufFile, type GgufNumericArray, type GgufValue } from './types.js';

const TYPE_NAMES: Record<GgufValueType, string> = {
  [GgufValueType.UINT8]: 'uint8',
  [GgufValueType.INT8]: 'int8',
  [GgufValueType.UINT16]: 'uint16',
  [GgufValueType.INT16]: 'int16',
  [GgufValueType.UINT32]: 'uint32',
  [GgufValueType.INT32]: 'int32',
  [GgufValueType.FLOAT32]: 'float32',
  [GgufValueType.BOOL]: 'bool',
  [GgufValueType.STRING]: 'string',
  [GgufValueType.ARRAY]: 'array',
  [GgufValueType.UINT64]: 'uint64',
  [GgufValueType.INT64]: 'int64',
  [GgufValueType.FLOAT64]: 'float64',
};

/** `uint32`, `array of string`: how a key's stored type reads in messages and `kiln info`. */
export function describeValueType(file: GgufFile, key: string): string {
  const t = file.metadataTypes.get(key);
  if (!t) return 'missing';
  if (t.type !== GgufValueType.ARRAY) return TYPE_NAMES[t.type];
  return `array of ${t.elementType === undefined ? 'unknown' : TYPE_NAMES[t.elementType]}`;
}

export function valueTypeName(type: GgufValueType): string {
  return TYPE_NAMES[type];
}

function found(file: GgufFile, key: string, value: GgufValue): string {
  const type = describeValueType(file, key);
  return typeof value === 'bigint' ? `${type} ${value} (beyond 2^53)` : type;
}

export function getOptionalString(file: GgufFile, key: string): string | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new GgufMetadataError(key, 'string', found(file, key, v));
  return v;
}

export function getString(file: GgufFile, key: string): string {
  const v = getOptionalString(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'string', 'missing');
  return v;
}

/** Any numeric scalar type; 64-bit integers beyond 2^53 are rejected rather than rounded. */
export function getOptionalNumber(file: GgufFile, key: string): number | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new GgufMetadataError(key, 'number', found(file, key, v));
  return v;
}

export function getNumber(file: GgufFile, key: string): number {
  const v = getOptionalNumber(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'number', 'missing');
  return v;
}

/** A number that must be a non-negative integer (a count, a size, a token id). */
export function getOptionalCount(file: GgufFile, key: string): number | undefined {
  const v = getOptionalNumber(file, key);
  if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new GgufMetadataError(key, 'non-negative integer', `${v}`);
  return v;
}

export function getCount(file: GgufFile, key: string): number {
  const v = getOptionalCount(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'non-negative integer', 'missing');
  return v;
}

export function getOptionalBool(file: GgufFile, key: string): boolean | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new GgufMetadataError(key, 'bool', found(file, key, v));
  return v;
}

export function getBool(file: GgufFile, key: string): boolean {
  const v = getOptionalBool(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'bool', 'missing');
  return v;
}

/** Any array value: string[], boolean[], a typed array, or nested arrays. */
export function getArray(file: GgufFile, key: string): ArrayLike<GgufValue> {
  const v = file.metadata.get(key);
  if (v === undefined) throw new GgufMetadataError(key, 'array', 'missing');
  if (!isArrayValue(v)) throw new GgufMetadataError(key, 'array', found(file, key, v));
  return v;
}

export function getOptionalStringArray(file: GgufFile, key: string): string[] | undefined {
  if (!file.metadata.has(key)) return undefined;
  if (file.metadataTypes.get(key)?.elementType !== GgufValueType.STRING) {
    throw new GgufMetadataError(key, 'array of string', found(file, key, file.metadata.get(key)!));
  }
  return file.metadata.get(key) as string[];
}

export function getStringArray(file: GgufFile, key: string): string[] {
  const v = getOptionalStringArray(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'array of string', 'missing');
  return v;
}

/** A numeric array of any element type (token scores, token types); may alias the file. */
export function getOptionalNumericArray(file: GgufFile, key: string): GgufNumericArray | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (!ArrayBuffer.isView(v)) throw new GgufMetadataError(key, 'numeric array', found(file, key, v));
  return v as GgufNumericArray;
}

export function getNumericArray(file: GgufFile, key: string): GgufNumericArray {
  const v = getOptionalNumericArray(file, key);
  if (v === undefined) throw new GgufMetadataError(key, 'numeric array', 'missing');
  return v;
}

function isArrayValue(v: GgufValue): v is Exclude<GgufValue, number | bigint | boolean | string> {
  return Array.isArray(v) || ArrayBuffer.isView(v);
}
