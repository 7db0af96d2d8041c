// `kiln info FILE`: what a GGUF file holds, readable in a terminal. Metadata comes from an
// untrusted file, so every string is escaped before it reaches the terminal.
import { GGML_TYPES, type GgmlType } from '../gguf/ggml-type.js';
import { valueTypeName } from '../gguf/metadata.js';
import { GgufValueType, type GgufFile, type GgufNumericArray, type GgufTensorInfo, type GgufValue } from '../gguf/types.js';

/** Array elements shown before `...`. */
const ARRAY_PREVIEW = 3;
/** Arrays this short are shown whole. */
const ARRAY_WHOLE = 8;
/** Characters of a string value shown before it is cut. */
const STRING_PREVIEW = 80;
/** Characters of a string shown inside an array preview. */
const ELEMENT_PREVIEW = 24;
/** Tensors listed from each end of the tensor list when it is long. */
const TENSORS_HEAD = 5;
const TENSORS_TAIL = 3;

const TYPED_ARRAY_NAMES: [Function, string][] = [
  [Uint8Array, 'uint8'], [Int8Array, 'int8'], [Uint16Array, 'uint16'], [Int16Array, 'int16'],
  [Uint32Array, 'uint32'], [Int32Array, 'int32'], [Float32Array, 'float32'], [Float64Array, 'float64'],
  [BigUint64Array, 'uint64'], [BigInt64Array, 'int64'],
];

export function formatInfo(file: GgufFile): string {
  const lines = [
    `GGUF v${file.version}, ${count(file.fileSize)} bytes, alignment ${file.alignment}, tensor data at byte ${count(file.dataOffset)}`,
    '',
    `metadata (${file.metadata.size} keys)`,
  ];
  const keyWidth = Math.min(40, Math.max(0, ...[...file.metadata.keys()].map((k) => sanitize(k).length)));
  for (const [key, value] of file.metadata) {
    const t = file.metadataTypes.get(key)!;
    const type = t.type === GgufValueType.ARRAY ? 'array' : valueTypeName(t.type);
    lines.push(`  ${sanitize(key).padEnd(keyWidth)}  ${type.padEnd(7)}  ${formatValue(value, t.type, STRING_PREVIEW)}`);
  }
  lines.push('', ...formatTensors(file.tensors));
  return lines.join('\n') + '\n';
}

function formatTensors(tensors: GgufTensorInfo[]): string[] {
  const byType = new Map<GgmlType, { tensors: number; params: number; bytes: number }>();
  let params = 0;
  let bytes = 0;
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    params += n;
    bytes += t.byteSize;
    const row = byType.get(t.type) ?? { tensors: 0, params: 0, bytes: 0 };
    row.tensors++;
    row.params += n;
    row.bytes += t.byteSize;
    byType.set(t.type, row);
  }
  const lines = [`tensors: ${tensors.length}, ${count(params)} params, ${count(bytes)} bytes (${mib(bytes)})`];
  for (const [type, row] of [...byType].sort((a, b) => b[1].bytes - a[1].bytes)) {
    lines.push(`  ${GGML_TYPES[type].name.padEnd(5)} ${String(row.tensors).padStart(5)} tensors  ${count(row.params).padStart(15)} params  ${count(row.bytes).padStart(15)} bytes`);
  }
  if (tensors.length === 0) return lines;
  const long = tensors.length > TENSORS_HEAD + TENSORS_TAIL + 1;
  const shown = long ? [...tensors.slice(0, TENSORS_HEAD), undefined, ...tensors.slice(-TENSORS_TAIL)] : tensors;
  const nameWidth = Math.min(48, Math.max(...tensors.map((t) => sanitize(t.name).length)));
  lines.push('');
  for (const t of shown) {
    if (!t) {
      lines.push(`  ... ${tensors.length - TENSORS_HEAD - TENSORS_TAIL} more`);
      continue;
    }
    const dims = `[${t.dims.join(', ')}]`;
    lines.push(`  ${sanitize(t.name).padEnd(nameWidth)}  ${GGML_TYPES[t.type].name.padEnd(5)} ${dims.padEnd(18)} ${count(t.byteSize).padStart(13)} bytes at +${count(t.offset)}`);
  }
  return lines;
}

function formatValue(value: GgufValue, type: GgufValueType, maxChars: number): string {
  if (typeof value === 'string') return quote(value, maxChars);
  if (typeof value === 'number') return type === GgufValueType.FLOAT32 ? shortestFloat32(value) : String(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  return formatArray(value);
}

/** `[32000 strings: "<unk>", "<s>", "</s>", ...]`, or the whole array when it is short. */
function formatArray(value: string[] | boolean[] | GgufNumericArray | GgufValue[]): string {
  const n = value.length;
  if (n === 0) return '[]';
  const shown = n <= ARRAY_WHOLE ? n : ARRAY_PREVIEW;
  const items: string[] = [];
  let kind: string;
  if (ArrayBuffer.isView(value)) {
    kind = TYPED_ARRAY_NAMES.find(([ctor]) => value instanceof ctor)![1];
    for (let i = 0; i < shown; i++) items.push(kind === 'float32' ? shortestFloat32(value[i] as number) : String(value[i]));
  } else {
    const first = value[0];
    kind = typeof first === 'string' ? 'strings' : typeof first === 'boolean' ? 'bools' : 'arrays';
    for (let i = 0; i < shown; i++) {
      const v = value[i]!;
      items.push(typeof v === 'string' ? quote(v, ELEMENT_PREVIEW) : typeof v === 'boolean' ? String(v) : formatArray(v as GgufValue[]));
    }
  }
  return `[${n} ${kind}: ${items.join(', ')}${n > shown ? ', ...' : ''}]`;
}

/** JSON-quoted, cut at `maxChars` with the full length noted. */
function quote(s: string, maxChars: number): string {
  const cut = s.length > maxChars;
  const q = sanitize(JSON.stringify(cut ? s.slice(0, maxChars) : s));
  return cut ? `${q.slice(0, -1)}..." (${count(s.length)} chars)` : q;
}

/**
 * Escapes what JSON.stringify leaves raw but a terminal may act on: DEL and C1 controls (CSI
 * sequences), bidi overrides that reorder what is shown, line and paragraph separators.
 */
function sanitize(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The shortest decimal that reads back as the same float32 (1e-5, not 9.999999747378752e-6). */
function shortestFloat32(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  for (let p = 1; p < 9; p++) {
    const s = Number(v.toPrecision(p));
    if (Math.fround(s) === v) return String(s);
  }
  return String(v);
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;
}
