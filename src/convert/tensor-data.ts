// Produces the bytes of one planned tensor in its GGML storage type, a bounded chunk of rows at a
// time: source rows (F32, F16 or BF16 from the mapping) -> float32 -> permuted -> quantized by
// the native reference quantizers (the same bytes as src/reference/quantize.ts).
import { GgmlType, rowBytes } from '../gguf/ggml-type.js';
import { native } from '../native/binding.js';
import type { PlannedTensor } from './tensor-plan.js';

/** Float32 values converted per chunk: 16 MiB of scratch, whatever the model's size. */
const CHUNK_VALUES = 1 << 22;

const SOURCE_TYPES: Record<string, GgmlType> = { F32: GgmlType.F32, F16: GgmlType.F16, BF16: GgmlType.BF16 };

/** Each chunk stays valid until the next one is requested (its scratch is reused). */
export function* tensorChunks(t: PlannedTensor): Generator<Uint8Array> {
  if (t.source instanceof Float32Array) {
    yield encode(t.type, t.source);
    return;
  }
  const src = t.source.tensor;
  const srcType = SOURCE_TYPES[src.dtype]!;
  const group = t.permuteHeadRows ?? 1;
  const chunkRows = Math.max(group, Math.floor(CHUNK_VALUES / t.cols / group) * group);
  const srcRowBytes = rowBytes(srcType, t.cols);

  // Already in the storage type and in order: the bytes go through untouched.
  if (srcType === t.type && t.permuteHeadRows === null) {
    for (let r = 0; r < t.rows; r += chunkRows) yield src.data.subarray(r * srcRowBytes, Math.min(t.rows, r + chunkRows) * srcRowBytes);
    return;
  }
  const addon = native();
  const values = new Float32Array(Math.min(chunkRows, t.rows) * t.cols);
  const permuted = t.permuteHeadRows === null ? values : new Float32Array(values.length);
  for (let r = 0; r < t.rows; r += chunkRows) {
    const n = Math.min(chunkRows, t.rows - r);
    const x = values.subarray(0, n * t.cols);
    const bytes = src.data.subarray(r * srcRowBytes, (r + n) * srcRowBytes);
    if (srcType === GgmlType.F32) new Uint8Array(x.buffer, x.byteOffset, x.byteLength).set(bytes);
    else addon.dequantize(srcType, bytes, x);
    const y = permuted.subarray(0, x.length);
    if (t.permuteHeadRows !== null) permuteRows(x, y, n, t.cols, t.permuteHeadRows);
    yield encode(t.type, y);
  }
}

function encode(type: GgmlType, x: Float32Array): Uint8Array {
  if (type === GgmlType.F32) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  const out = new Uint8Array(rowBytes(type, x.length));
  native().quantize(type, x, out);
  return out;
}

/**
 * convert_hf_to_gguf.py's LlamaModel.permute on whole heads of `headRows` rows: HF pairs
 * dimension i with i + headRows/2 (rotate-half), llama.cpp's normal RoPE pairs 2i with 2i + 1, so
 * row 2i + j of a head comes from row j * headRows/2 + i.
 */
export function permuteRows(x: Float32Array, y: Float32Array, rows: number, cols: number, headRows: number): void {
  const half = headRows / 2;
  for (let head = 0; head < rows; head += headRows) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (head + j * half + i) * cols;
        y.set(x.subarray(from, from + cols), (head + 2 * i + j) * cols);
      }
    }
  }
}
