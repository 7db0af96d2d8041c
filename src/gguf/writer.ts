// Writes GGUF files (little-endian, v3 or v2) from explicit value types: for tests, `kiln convert`
// and benches. It rejects a spec that would make a file the reader refuses.
import { InvalidArgumentError } from '../errors.js';
import { ggmlTypeInfo, type GgmlType } from './ggml-type.js';
import { DEFAULT_ALIGNMENT, MAX_ALIGNMENT, MAX_DIMS } from './limits.js';
import { GgufValueType } from './types.js';

type NumericValueType = Exclude<GgufValueType, GgufValueType.BOOL | GgufValueType.STRING | GgufValueType.ARRAY>;

export type GgufWriteArray =
  | { type: GgufValueType.ARRAY; elementType: NumericValueType; value: ArrayLike<number | bigint> }
  | { type: GgufValueType.ARRAY; elementType: GgufValueType.BOOL; value: readonly boolean[] }
  /** Uint8Array strings are written as their raw bytes (for invalid UTF-8 in tests). */
  | { type: GgufValueType.ARRAY; elementType: GgufValueType.STRING; value: readonly (string | Uint8Array)[] }
  | { type: GgufValueType.ARRAY; elementType: GgufValueType.ARRAY; value: readonly GgufWriteArray[] };

export type GgufWriteValue =
  | { type: NumericValueType; value: number | bigint }
  | { type: GgufValueType.BOOL; value: boolean }
  | { type: GgufValueType.STRING; value: string | Uint8Array }
  | GgufWriteArray;

export interface GgufWriteTensor {
  name: string;
  /** GGML order: dims[0] is the row width. */
  dims: readonly number[];
  type: GgmlType;
  /** Exactly the tensor's bytes in its GGML block layout. */
  data: Uint8Array;
}

export interface GgufWriteSpec {
  /** Defaults to 3; version 2 has the same layout for little-endian files. */
  version?: 2 | 3;
  /** Written in this order. A `general.alignment` (uint32) entry sets the data alignment. */
  metadata?: ReadonlyArray<{ key: string } & GgufWriteValue>;
  /** Written in this order, each at the next aligned offset of the data section. */
  tensors?: readonly GgufWriteTensor[];
}

/** Inclusive ranges of the integer types, as bigint so 64-bit bounds are exact. */
const INT_RANGE: Partial<Record<GgufValueType, [bigint, bigint, number]>> = {
  [GgufValueType.UINT8]: [0n, 0xffn, 1],
  [GgufValueType.INT8]: [-0x80n, 0x7fn, 1],
  [GgufValueType.UINT16]: [0n, 0xffffn, 2],
  [GgufValueType.INT16]: [-0x8000n, 0x7fffn, 2],
  [GgufValueType.UINT32]: [0n, 0xffffffffn, 4],
  [GgufValueType.INT32]: [-0x80000000n, 0x7fffffffn, 4],
  [GgufValueType.UINT64]: [0n, 0xffffffffffffffffn, 8],
  [GgufValueType.INT64]: [-0x8000000000000000n, 0x7fffffffffffffffn, 8],
};

const utf8 = new TextEncoder();

/** A growable little-endian byte buffer. */
class Sink {
  buf = new Uint8Array(4096);
  view = new DataView(this.buf.buffer);
  len = 0;

  reserve(n: number): number {
    if (this.len + n > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
      next.set(this.buf.subarray(0, this.len));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.len;
    this.len += n;
    return at;
  }

  // reserve() may replace the view, so it runs before the view is read.
  u32(v: number): void { const at = this.reserve(4); this.view.setUint32(at, v, true); }
  u64(v: number | bigint): void { const at = this.reserve(8); this.view.setBigUint64(at, BigInt(v), true); }
  f32(v: number): void { const at = this.reserve(4); this.view.setFloat32(at, v, true); }
  f64(v: number): void { const at = this.reserve(8); this.view.setFloat64(at, v, true); }
  bytes(b: Uint8Array): void { const at = this.reserve(b.length); this.buf.set(b, at); }
  string(s: string | Uint8Array): void {
    const b = typeof s === 'string' ? utf8.encode(s) : s;
    this.u64(b.length);
    this.bytes(b);
  }
}

/** A tensor's entry in the header: its data comes later (writeGguf, or GgufStreamWriter). */
export type GgufTensorInfo = Omit<GgufWriteTensor, 'data'>;

export interface GgufHeader {
  /** Magic through the tensor infos, zero-padded to the alignment: the data section starts here. */
  bytes: Uint8Array;
  alignment: number;
  /** Each tensor's offset in the data section, and its size in bytes (without padding). */
  offsets: number[];
  sizes: number[];
  /** The data section's length, every tensor padded to the alignment. */
  dataSize: number;
}

/** Serializes `spec` into one GGUF file. */
export function writeGguf(spec: GgufWriteSpec): Uint8Array {
  const tensors = spec.tensors ?? [];
  const header = encodeGgufHeader({ ...spec, tensors });
  tensors.forEach((t, i) => {
    const bytes = header.sizes[i]!;
    if (t.data.length !== bytes) {
      throw new InvalidArgumentError(`writeGguf: tensor "${t.name}" (${ggmlTypeInfo(t.type)!.name}, [${t.dims.join(', ')}]) needs ${bytes} bytes of data, got ${t.data.length}`, 'tensors');
    }
  });
  const out = new Uint8Array(header.bytes.length + header.dataSize);
  out.set(header.bytes);
  tensors.forEach((t, i) => out.set(t.data, header.bytes.length + header.offsets[i]!));
  return out;
}

/** The header of a GGUF file for `spec`: everything before the tensor data. */
export function encodeGgufHeader(spec: { version?: 2 | 3; metadata?: GgufWriteSpec['metadata']; tensors?: readonly GgufTensorInfo[] }): GgufHeader {
  const metadata = spec.metadata ?? [];
  const tensors = spec.tensors ?? [];
  const alignment = alignmentOf(metadata);
  const sink = new Sink();
  sink.bytes(new Uint8Array([0x47, 0x47, 0x55, 0x46]));
  sink.u32(spec.version ?? 3);
  sink.u64(tensors.length);
  sink.u64(metadata.length);

  const keys = new Set<string>();
  for (const entry of metadata) {
    if (keys.has(entry.key)) throw new InvalidArgumentError(`writeGguf: metadata key "${entry.key}" appears twice`, 'metadata');
    keys.add(entry.key);
    sink.string(entry.key);
    sink.u32(entry.type);
    writeValue(sink, entry, `metadata "${entry.key}"`);
  }

  const names = new Set<string>();
  const offsets: number[] = [];
  const sizes: number[] = [];
  let dataSize = 0;
  for (const t of tensors) {
    if (names.has(t.name)) throw new InvalidArgumentError(`writeGguf: tensor name "${t.name}" appears twice`, 'tensors');
    names.add(t.name);
    const bytes = tensorBytes(t);
    sink.string(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(t.type);
    sink.u64(dataSize);
    offsets.push(dataSize);
    sizes.push(bytes);
    dataSize += alignUp(bytes, alignment);
  }

  const bytes = new Uint8Array(alignUp(sink.len, alignment));
  bytes.set(sink.buf.subarray(0, sink.len));
  return { bytes, alignment, offsets, sizes, dataSize };
}

function writeValue(sink: Sink, v: GgufWriteValue, where: string): void {
  switch (v.type) {
    case GgufValueType.BOOL: sink.bytes(new Uint8Array([v.value ? 1 : 0])); return;
    case GgufValueType.STRING: sink.string(v.value); return;
    case GgufValueType.ARRAY: writeArray(sink, v, where); return;
    default: writeNumber(sink, v.type, v.value, where);
  }
}

function writeArray(sink: Sink, a: GgufWriteArray, where: string): void {
  sink.u32(a.elementType);
  sink.u64(a.value.length);
  for (let i = 0; i < a.value.length; i++) {
    const at = `${where}[${i}]`;
    switch (a.elementType) {
      case GgufValueType.BOOL: sink.bytes(new Uint8Array([a.value[i] ? 1 : 0])); break;
      case GgufValueType.STRING: sink.string(a.value[i]!); break;
      case GgufValueType.ARRAY: {
        const inner = a.value[i]!;
        if (inner.type !== GgufValueType.ARRAY) throw new InvalidArgumentError(`writeGguf: ${at} must be an array value`, 'metadata');
        writeArray(sink, inner, at);
        break;
      }
      default: writeNumber(sink, a.elementType, a.value[i]!, at);
    }
  }
}

function writeNumber(sink: Sink, type: NumericValueType, value: number | bigint, where: string): void {
  if (type === GgufValueType.FLOAT32) { sink.f32(Number(value)); return; }
  if (type === GgufValueType.FLOAT64) { sink.f64(Number(value)); return; }
  const range = INT_RANGE[type];
  if (!range) throw new InvalidArgumentError(`writeGguf: ${where} has unknown value type ${type}`, 'metadata');
  const [min, max, size] = range;
  if (typeof value === 'number' && !Number.isInteger(value)) throw new InvalidArgumentError(`writeGguf: ${where} must be an integer, got ${value}`, 'metadata');
  const big = BigInt(value);
  if (big < min || big > max) throw new InvalidArgumentError(`writeGguf: ${where} = ${value} is outside ${min}..${max}`, 'metadata');
  // Two's complement of the low `size` bytes is the same for signed and unsigned types.
  const at = sink.reserve(size);
  const bits = BigInt.asUintN(size * 8, big);
  for (let i = 0; i < size; i++) sink.buf[at + i] = Number((bits >> BigInt(8 * i)) & 0xffn);
}

function alignmentOf(metadata: NonNullable<GgufWriteSpec['metadata']>): number {
  const entry = metadata.find((e) => e.key === 'general.alignment');
  if (!entry) return DEFAULT_ALIGNMENT;
  const a = entry.type === GgufValueType.UINT32 ? Number(entry.value) : NaN;
  if (!Number.isInteger(a) || a < 1 || a > MAX_ALIGNMENT || (a & (a - 1)) !== 0) {
    throw new InvalidArgumentError(`writeGguf: general.alignment must be a uint32 power of two up to ${MAX_ALIGNMENT}`, 'metadata');
  }
  return a;
}

/** Checks a tensor's name, type and dims, and returns the bytes its data takes. */
function tensorBytes(t: GgufTensorInfo): number {
  const info = ggmlTypeInfo(t.type);
  if (!info) throw new InvalidArgumentError(`writeGguf: tensor "${t.name}" has unknown GGML type ${t.type}`, 'tensors');
  if (t.dims.length < 1 || t.dims.length > MAX_DIMS || t.dims.some((d) => !Number.isSafeInteger(d) || d < 1)) {
    throw new InvalidArgumentError(`writeGguf: tensor "${t.name}" needs 1 to ${MAX_DIMS} positive dims, got [${t.dims.join(', ')}]`, 'tensors');
  }
  const elements = t.dims.reduce((a, b) => a * b, 1);
  if (t.dims[0]! % info.blockSize !== 0) {
    throw new InvalidArgumentError(`writeGguf: tensor "${t.name}" row width ${t.dims[0]} is not a multiple of the ${info.name} block size ${info.blockSize}`, 'tensors');
  }
  return (elements / info.blockSize) * info.typeSize;
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}
