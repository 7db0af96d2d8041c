// Reads .safetensors files (an 8-byte little-endian header length, a JSON header, then the raw
// tensor data) from a memory mapping, checking the header length, every dtype, shape and offset
// against the file before a byte of tensor data is touched.
import { native } from '../native/binding.js';
import { HfModelFileMissingError, SafetensorsFormatError } from './errors.js';
import { isRecord, statFile } from './read-file.js';
import {
  MAX_SAFETENSORS_DIMS, MAX_SAFETENSORS_HEADER_BYTES, MAX_SAFETENSORS_TENSORS, MAX_TENSOR_NAME_BYTES,
} from './limits.js';

/** Bytes per element of every dtype the format defines; tensors of any of them parse. */
const DTYPE_BYTES: Record<string, number> = {
  BOOL: 1, U8: 1, I8: 1, F8_E4M3: 1, F8_E5M2: 1, F8_E8M0: 1,
  U16: 2, I16: 2, F16: 2, BF16: 2,
  U32: 4, I32: 4, F32: 4,
  U64: 8, I64: 8, F64: 8,
};

export interface SafetensorsTensor {
  name: string;
  dtype: string;
  /** PyTorch order: the last dimension is contiguous. */
  shape: number[];
  /** The tensor's bytes, a view into the mapping. */
  data: Uint8Array;
}

export interface SafetensorsFile {
  path: string;
  /** In the order of their data in the file. */
  tensors: SafetensorsTensor[];
}

/** Maps `path` read-only and parses it; the tensors' data stays in the mapping. */
export function openSafetensors(path: string): SafetensorsFile {
  if (statFile(path) === null) throw new HfModelFileMissingError(path, 'does not exist');
  let buffer: ArrayBuffer;
  try {
    buffer = native().mapFile(path);
  } catch (err) {
    throw new HfModelFileMissingError(path, `cannot be mapped (${(err as Error).message})`);
  }
  return { path, tensors: parseSafetensors(new Uint8Array(buffer), path) };
}

/** Parses the header of a safetensors file held in `bytes`; `where` names it in errors. */
export function parseSafetensors(bytes: Uint8Array, where: string): SafetensorsTensor[] {
  const fail = (detail: string): never => {
    throw new SafetensorsFormatError(where, detail);
  };
  if (bytes.length < 8) fail(`the file has ${bytes.length} bytes, fewer than the 8 of the header length`);
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (headerLength > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
    fail(`the header length ${headerLength} exceeds the ${MAX_SAFETENSORS_HEADER_BYTES}-byte limit`);
  }
  if (headerLength > BigInt(bytes.length - 8)) {
    fail(`the header length ${headerLength} runs past the end of the ${bytes.length}-byte file`);
  }
  const dataStart = 8 + Number(headerLength);
  const dataLength = bytes.length - dataStart;

  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, dataStart)));
  } catch (err) {
    fail(`the header is not UTF-8 JSON (${(err as Error).message})`);
  }
  if (!isRecord(header)) fail('the header is not a JSON object');
  const entries = Object.entries(header as Record<string, unknown>).filter(([name]) => name !== '__metadata__');
  if (entries.length > MAX_SAFETENSORS_TENSORS) fail(`the header lists ${entries.length} tensors, more than the limit of ${MAX_SAFETENSORS_TENSORS}`);

  const parsed: Array<{ name: string; dtype: string; shape: number[]; begin: number; end: number }> = [];
  for (const [name, value] of entries) {
    const at = `tensor ${JSON.stringify(name.slice(0, 64))}`;
    if (Buffer.byteLength(name) > MAX_TENSOR_NAME_BYTES) fail(`a tensor name is longer than ${MAX_TENSOR_NAME_BYTES} bytes`);
    if (!isRecord(value)) fail(`${at} is not an object`);
    const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
    if (typeof dtype !== 'string' || !Object.hasOwn(DTYPE_BYTES, dtype)) fail(`${at} has the unknown dtype ${JSON.stringify(dtype)}`);
    if (!Array.isArray(shape) || shape.length > MAX_SAFETENSORS_DIMS || !shape.every(isCount)) {
      fail(`${at} needs a shape of at most ${MAX_SAFETENSORS_DIMS} non-negative integers, found ${JSON.stringify(shape)}`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount)) {
      fail(`${at} needs data_offsets [begin, end], found ${JSON.stringify(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    if (begin > end || end > dataLength) fail(`${at} has data_offsets [${begin}, ${end}] outside the ${dataLength} bytes of data`);
    let elements = (shape as number[]).includes(0) ? 0 : 1;
    for (const d of shape as number[]) {
      if (elements > dataLength) break; // cannot fit; stopping keeps the product exact
      elements *= d;
    }
    const size = elements * DTYPE_BYTES[dtype as string]!;
    if (size !== end - begin) fail(`${at} (${dtype}, shape [${(shape as number[]).join(', ')}]) needs ${size} bytes but its data_offsets span ${end - begin}`);
    parsed.push({ name, dtype: dtype as string, shape: shape as number[], begin, end });
  }

  // As safetensors itself requires: the tensors tile the data section exactly, without gaps or overlaps.
  parsed.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const t of parsed) {
    if (t.begin !== cursor) {
      fail(t.begin < cursor
        ? `tensor ${JSON.stringify(t.name.slice(0, 64))} overlaps the one before it (offset ${t.begin} < ${cursor})`
        : `${t.begin - cursor} bytes at data offset ${cursor} belong to no tensor`);
    }
    cursor = t.end;
  }
  if (cursor !== dataLength) fail(`the tensors cover ${cursor} of the ${dataLength} data bytes`);

  return parsed.map((t) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    data: bytes.subarray(dataStart + t.begin, dataStart + t.end),
  }));
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
