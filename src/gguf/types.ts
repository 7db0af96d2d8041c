// The parsed shape of a GGUF file: metadata key/values and tensor infos. Weights stay in the
// file's memory mapping; a tensor info only says where they are.
import type { GgmlType } from './ggml-type.js';

export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** Numeric arrays come back as typed arrays (views may alias the file mapping: treat as read-only). */
export type GgufNumericArray =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array
  | Float32Array | Float64Array | BigUint64Array | BigInt64Array;

/**
 * A metadata value. 64-bit integers are numbers when they are safe integers, bigint otherwise.
 * Arrays of strings are string[]; arrays of bools are boolean[]; arrays of arrays are GgufValue[].
 */
export type GgufValue = number | bigint | boolean | string | string[] | boolean[] | GgufNumericArray | GgufValue[];

export interface GgufTensorInfo {
  name: string;
  /** GGML order: dims[0] is the row width (ne0), dims[1] the number of rows, ... */
  dims: number[];
  type: GgmlType;
  /** Offset of the tensor's bytes from the start of the data section. */
  offset: number;
  /** Bytes the tensor occupies. */
  byteSize: number;
}

export interface GgufFile {
  version: 2 | 3;
  metadata: Map<string, GgufValue>;
  /** The value type each metadata key was stored with (and, for arrays, of its elements). */
  metadataTypes: Map<string, { type: GgufValueType; elementType?: GgufValueType }>;
  tensors: GgufTensorInfo[];
  /** `general.alignment`, or 32. */
  alignment: number;
  /** Absolute file offset of the tensor data section. */
  dataOffset: number;
  fileSize: number;
}
