// Turns a parsed file's metadata back into writer entries with their original value types, so a
// model can be rewritten (re-quantized, trimmed) without losing or retyping a key.
import { GgufValueType, type GgufFile, type GgufValue } from './types.js';
import type { GgufWriteArray, GgufWriteValue } from './writer.js';

export function metadataEntries(file: GgufFile): Array<{ key: string } & GgufWriteValue> {
  const out: Array<{ key: string } & GgufWriteValue> = [];
  for (const [key, value] of file.metadata) {
    const t = file.metadataTypes.get(key)!;
    out.push({ key, ...toWriteValue(value, t.type, t.elementType) } as { key: string } & GgufWriteValue);
  }
  return out;
}

function toWriteValue(value: GgufValue, type: GgufValueType, elementType?: GgufValueType): GgufWriteValue {
  if (type !== GgufValueType.ARRAY) return { type, value } as GgufWriteValue;
  return toWriteArray(value, elementType!);
}

function toWriteArray(value: GgufValue, elementType: GgufValueType): GgufWriteArray {
  if (elementType === GgufValueType.ARRAY) {
    // Nested arrays do not record their inner element type; infer it from the values.
    const items = (value as GgufValue[]).map((v) => toWriteArray(v, inferElementType(v)));
    return { type: GgufValueType.ARRAY, elementType, value: items };
  }
  return { type: GgufValueType.ARRAY, elementType, value } as GgufWriteArray;
}

function inferElementType(v: GgufValue): GgufValueType {
  if (v instanceof Float32Array) return GgufValueType.FLOAT32;
  if (v instanceof Float64Array) return GgufValueType.FLOAT64;
  if (v instanceof Int32Array) return GgufValueType.INT32;
  if (v instanceof Uint32Array) return GgufValueType.UINT32;
  if (v instanceof Int16Array) return GgufValueType.INT16;
  if (v instanceof Uint16Array) return GgufValueType.UINT16;
  if (v instanceof Int8Array) return GgufValueType.INT8;
  if (v instanceof Uint8Array) return GgufValueType.UINT8;
  if (v instanceof BigInt64Array) return GgufValueType.INT64;
  if (v instanceof BigUint64Array) return GgufValueType.UINT64;
  if (Array.isArray(v) && v.length > 0 && typeof v[0] === 'string') return GgufValueType.STRING;
  if (Array.isArray(v) && v.length > 0 && typeof v[0] === 'boolean') return GgufValueType.BOOL;
  return GgufValueType.ARRAY;
}
