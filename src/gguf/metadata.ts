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

/** The value at `key` if `is` accepts it; undefined when the key is absent. */
function optional<V extends GgufValue>(file: GgufFile, key: string, expected: string, is: (v: GgufValue) => v is V): V | undefined {
  const v = file.metadata.get(key);
  if (v === undefined) return undefined;
  if (!is(v)) throw new GgufMetadataError(key, expected, found(file, key, v));
  return v;
}

function required<V>(key: string, expected: string, v: V | undefined): V {
  if (v === undefined) throw new GgufMetadataError(key, expected, 'missing');
  return v;
}

const isString = (v: GgufValue): v is string => typeof v === 'string';
const isNumber = (v: GgufValue): v is number => typeof v === 'number';
const isBool = (v: GgufValue): v is boolean => typeof v === 'boolean';
const isArray = (v: GgufValue): v is Exclude<GgufValue, number | bigint | boolean | string> => Array.isArray(v) || ArrayBuffer.isView(v);
const isNumericArray = (v: GgufValue): v is GgufNumericArray => ArrayBuffer.isView(v);

export function getOptionalString(file: GgufFile, key: string): string | undefined {
  return optional(file, key, 'string', isString);
}

export function getString(file: GgufFile, key: string): string {
  return required(key, 'string', getOptionalString(file, key));
}

/** Any numeric scalar type; 64-bit integers beyond 2^53 are rejected rather than rounded. */
export function getOptionalNumber(file: GgufFile, key: string): number | undefined {
  return optional(file, key, 'number', isNumber);
}

export function getNumber(file: GgufFile, key: string): number {
  return required(key, 'number', getOptionalNumber(file, key));
}

/** A number that must be a non-negative integer (a count, a size, a token id). */
export function getOptionalCount(file: GgufFile, key: string): number | undefined {
  const v = getOptionalNumber(file, key);
  if (v !== undefined && !(Number.isInteger(v) && v >= 0)) throw new GgufMetadataError(key, 'non-negative integer', `${v}`);
  return v;
}

export function getCount(file: GgufFile, key: string): number {
  return required(key, 'non-negative integer', getOptionalCount(file, key));
}

export function getOptionalBool(file: GgufFile, key: string): boolean | undefined {
  return optional(file, key, 'bool', isBool);
}

export function getBool(file: GgufFile, key: string): boolean {
  return required(key, 'bool', getOptionalBool(file, key));
}

/** Any array value: string[], boolean[], a typed array, or nested arrays. */
export function getArray(file: GgufFile, key: string): ArrayLike<GgufValue> {
  return required(key, 'array', optional(file, key, 'array', isArray));
}

export function getOptionalStringArray(file: GgufFile, key: string): string[] | undefined {
  // An empty array has no element to look at, so the stored element type decides.
  const isStringArray = (v: GgufValue): v is string[] => file.metadataTypes.get(key)?.elementType === GgufValueType.STRING;
  return optional(file, key, 'array of string', isStringArray);
}

export function getStringArray(file: GgufFile, key: string): string[] {
  return required(key, 'array of string', getOptionalStringArray(file, key));
}

/** A numeric array of any element type (token scores, token types); may alias the file. */
export function getOptionalNumericArray(file: GgufFile, key: string): GgufNumericArray | undefined {
  return optional(file, key, 'numeric array', isNumericArray);
}

export function getNumericArray(file: GgufFile, key: string): GgufNumericArray {
  return required(key, 'numeric array', getOptionalNumericArray(file, key));
}
