// Writes a GGUF file whose tensors are produced chunk by chunk, so a multi-gigabyte model never
// sits in memory. The metadata is serialized by src/gguf/writer.ts; only the tensor infos and the
// streaming of the data section are done here.
import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
import { GGML_TYPES, type GgmlType } from '../src/gguf/ggml-type.js';
import { writeGguf, type GgufWriteSpec } from '../src/gguf/writer.js';
import { GgufValueType } from '../src/gguf/types.js';

const ALIGNMENT = 32;

export interface StreamedTensor {
  name: string;
  /** GGML order: dims[0] is the row width. */
  dims: readonly number[];
  type: GgmlType;
  /** Yields the tensor's bytes in order; together exactly its size. */
  chunks(): Iterable<Uint8Array>;
}

export function tensorBytes(type: GgmlType, dims: readonly number[]): number {
  const info = GGML_TYPES[type];
  return (dims.reduce((a, b) => a * b, 1) / info.blockSize) * info.typeSize;
}

const alignUp = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;

function writeAll(fd: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
}

/**
 * The header: writeGguf's serialization of the metadata (written with `general.alignment` = 1 and
 * no tensors, so it ends exactly where the tensor infos begin), patched to the real tensor count
 * and alignment, then the tensor infos.
 */
function header(metadata: NonNullable<GgufWriteSpec['metadata']>, tensors: readonly StreamedTensor[]): Uint8Array {
  const kv = writeGguf({ metadata: [...metadata, { key: 'general.alignment', type: GgufValueType.UINT32, value: 1 }] });
  const view = new DataView(kv.buffer, kv.byteOffset, kv.byteLength);
  view.setBigUint64(8, BigInt(tensors.length), true);
  view.setUint32(kv.length - 4, ALIGNMENT, true); // the alignment entry is the last value
  const parts: Uint8Array[] = [kv];
  let offset = 0;
  for (const t of tensors) {
    const name = new TextEncoder().encode(t.name);
    const info = new Uint8Array(8 + name.length + 4 + 8 * t.dims.length + 4 + 8);
    const v = new DataView(info.buffer);
    let at = 0;
    v.setBigUint64(at, BigInt(name.length), true); at += 8;
    info.set(name, at); at += name.length;
    v.setUint32(at, t.dims.length, true); at += 4;
    for (const d of t.dims) { v.setBigUint64(at, BigInt(d), true); at += 8; }
    v.setUint32(at, t.type, true); at += 4;
    v.setBigUint64(at, BigInt(offset), true);
    parts.push(info);
    offset += alignUp(tensorBytes(t.type, t.dims));
  }
  const length = alignUp(parts.reduce((n, p) => n + p.length, 0));
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

/**
 * Writes `path` (through a temporary file renamed at the end, so an interrupted run never leaves a
 * truncated model behind). `onTensor` reports progress after each tensor.
 */
export function writeGgufStreaming(
  path: string,
  metadata: NonNullable<GgufWriteSpec['metadata']>,
  tensors: readonly StreamedTensor[],
  onTensor?: (done: number, total: number) => void,
): void {
  const temporary = `${path}.partial-${process.pid}`;
  const fd = openSync(temporary, 'w');
  try {
    const head = header(metadata, tensors);
    writeAll(fd, head);
    const padding = new Uint8Array(ALIGNMENT);
    tensors.forEach((t, i) => {
      const expected = tensorBytes(t.type, t.dims);
      let written = 0;
      for (const chunk of t.chunks()) {
        writeAll(fd, chunk);
        written += chunk.length;
      }
      if (written !== expected) throw new Error(`tensor ${t.name}: produced ${written} bytes, expected ${expected}`);
      const pad = alignUp(expected) - expected;
      if (pad > 0) writeAll(fd, padding.subarray(0, pad));
      onTensor?.(i + 1, tensors.length);
    });
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}
