// `npm run bench -- gguf-fuzz [--iterations N] [--seed S] [--models DIR]`: mutates and truncates
// the shared GGUF models with a seeded PRNG and parses each result. A parse must succeed with a
// self-consistent file or throw a KilnError subclass; anything else is a reader bug.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KilnError } from '../src/errors.js';
import { parseGguf } from '../src/gguf/reader.js';
import type { GgufFile } from '../src/gguf/types.js';
import { prng, type Prng } from '../test/helpers/prng.js';

export interface FuzzInput {
  name: string;
  bytes: Uint8Array;
}

export interface FuzzEscape {
  iteration: number;
  input: string;
  mutation: string;
  error: string;
}

export interface FuzzResult {
  iterations: number;
  parsed: number;
  /** Thrown KilnError subclasses by class name. */
  errors: Map<string, number>;
  /** Non-KilnError throws and successful parses that broke an invariant. */
  escapes: FuzzEscape[];
  ms: number;
  slowestMs: number;
}

/** Values that hit edges of u32/u64 counts, lengths, types and offsets. */
const INTERESTING = [0n, 1n, 2n, 3n, 4n, 5n, 7n, 8n, 9n, 12n, 13n, 31n, 32n, 33n, 63n, 64n, 255n, 256n, 0x7fffn, 0xffffn,
  0x7fffffffn, 0x80000000n, 0xffffffffn, 0x100000000n, 1n << 53n, (1n << 53n) + 1n, (1n << 63n) - 1n, 1n << 63n, (1n << 64n) - 1n];

/** What a mutation changed, so it can be undone without copying the file. */
interface Mutated {
  bytes: Uint8Array;
  describe: string;
  undo: Array<[number, number]>;
}

interface Target extends FuzzInput {
  /** Bytes before the tensor data: where mutations change what the parser sees. */
  headerEnd: number;
  /** A rough start of the tensor infos, where dims, types and offsets live. */
  tensorInfoStart: number;
}

export function fuzzGguf(inputs: FuzzInput[], iterations: number, seed: number): FuzzResult {
  const rng = prng(seed);
  const targets: Target[] = inputs.map((input) => {
    const file = parseGguf(input.bytes);
    // Copies, so mutating in place never touches a caller's buffer (or a read-only mapping).
    return { name: input.name, bytes: input.bytes.slice(), headerEnd: file.dataOffset, tensorInfoStart: Math.max(0, file.dataOffset - file.tensors.length * 64 - 64) };
  });
  const result: FuzzResult = { iterations, parsed: 0, errors: new Map(), escapes: [], ms: 0, slowestMs: 0 };
  const start = performance.now();
  for (let i = 0; i < iterations; i++) {
    const target = rng.pick(targets);
    const m = mutate(rng, target);
    const t0 = performance.now();
    try {
      const broken = checkInvariants(parseGguf(m.bytes), m.bytes.length);
      if (broken) result.escapes.push({ iteration: i, input: target.name, mutation: m.describe, error: `parsed, but ${broken}` });
      else result.parsed++;
    } catch (err) {
      if (err instanceof KilnError) result.errors.set(err.name, (result.errors.get(err.name) ?? 0) + 1);
      else result.escapes.push({ iteration: i, input: target.name, mutation: m.describe, error: String(err) });
    } finally {
      result.slowestMs = Math.max(result.slowestMs, performance.now() - t0);
      for (let j = m.undo.length - 1; j >= 0; j--) target.bytes[m.undo[j]![0]] = m.undo[j]![1];
    }
  }
  result.ms = performance.now() - start;
  return result;
}

function mutate(rng: Prng, t: Target): Mutated {
  const undo: Array<[number, number]> = [];
  const set = (pos: number, value: number): void => {
    if (pos >= t.bytes.length) return;
    undo.push([pos, t.bytes[pos]!]);
    t.bytes[pos] = value;
  };
  // Most positions of a big header are inside vocabulary strings, where a change rarely matters;
  // half the picks go to the first 4 KiB and the tensor infos, where every field is structure.
  const position = (): number => {
    const r = rng.next();
    if (r < 0.25) return rng.int(Math.min(4096, t.headerEnd));
    if (r < 0.5) return t.tensorInfoStart + rng.int(t.headerEnd - t.tensorInfoStart);
    return rng.int(t.headerEnd);
  };
  const kind = rng.int(5);
  if (kind === 0) {
    const end = rng.next() < 0.8 ? rng.int(t.headerEnd + 64) : rng.int(t.bytes.length);
    return { bytes: t.bytes.subarray(0, end), describe: `truncate to ${end}`, undo };
  }
  if (kind === 1) {
    const n = 1 + rng.int(4);
    const at: number[] = [];
    for (let k = 0; k < n; k++) {
      const pos = position();
      at.push(pos);
      set(pos, t.bytes[pos]! ^ (1 << rng.int(8)));
    }
    return { bytes: t.bytes, describe: `flip bits at ${at.join(', ')}`, undo };
  }
  if (kind === 2) {
    const pos = position();
    const width = rng.next() < 0.5 ? 4 : 8;
    const value = rng.pick(INTERESTING) + BigInt(rng.int(3) - 1);
    const bits = BigInt.asUintN(width * 8, value);
    for (let k = 0; k < width; k++) set(pos + k, Number((bits >> BigInt(8 * k)) & 0xffn));
    return { bytes: t.bytes, describe: `write u${width * 8} ${bits} at ${pos}`, undo };
  }
  if (kind === 3) {
    const pos = position();
    const n = 1 + rng.int(16);
    for (let k = 0; k < n; k++) set(pos + k, rng.int(256));
    return { bytes: t.bytes, describe: `${n} random bytes at ${pos}`, undo };
  }
  // Copy a chunk of the header over another place: moves whole fields (lengths, type ids) around.
  const from = position();
  const to = position();
  const n = 4 + rng.int(60);
  const chunk = t.bytes.slice(from, from + n);
  chunk.forEach((b, k) => set(to + k, b));
  return { bytes: t.bytes, describe: `copy ${n} bytes from ${from} to ${to}`, undo };
}

/** What a successful parse promises its callers; a description of the first broken promise. */
function checkInvariants(file: GgufFile, fileSize: number): string | undefined {
  if (file.dataOffset % file.alignment !== 0) return `dataOffset ${file.dataOffset} is not aligned`;
  const ranges = file.tensors.map((t) => [t.offset, t.offset + t.byteSize, t] as const).sort((a, b) => a[0] - b[0]);
  for (let i = 0; i < ranges.length; i++) {
    const [s, e, t] = ranges[i]!;
    if (!(t.byteSize > 0) || file.dataOffset + e > fileSize) return `tensor ${t.name} is outside the file`;
    if (s % file.alignment !== 0) return `tensor ${t.name} is not aligned`;
    if (i > 0 && s < ranges[i - 1]![1]) return `tensor ${t.name} overlaps another`;
  }
  return undefined;
}

function defaultModelsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  // Compiled to dist/bench/ or run from bench/ by the test runner: the repo root is one or two up.
  const root = existsSync(join(here, '..', 'package.json')) ? join(here, '..') : join(here, '..', '..');
  return join(process.env.KILN_SHARED ?? join(root, '..', 'shared'), 'models');
}

export function loadFuzzInputs(dir: string): FuzzInput[] {
  return readdirSync(dir).filter((f) => f.endsWith('.gguf')).sort().map((f) => ({ name: f, bytes: readFileSync(join(dir, f)) }));
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function run(args: string[]): Promise<void> {
  const iterations = Number(option(args, '--iterations') ?? 10_000);
  const seed = Number(option(args, '--seed') ?? 1);
  const dir = option(args, '--models') ?? defaultModelsDir();
  if (!Number.isSafeInteger(iterations) || iterations < 1 || !Number.isSafeInteger(seed)) {
    throw new Error('usage: gguf-fuzz [--iterations N] [--seed S] [--models DIR]');
  }
  const inputs = loadFuzzInputs(dir);
  if (inputs.length === 0) throw new Error(`gguf-fuzz: no .gguf files in ${dir}`);
  const r = fuzzGguf(inputs, iterations, seed);
  const out = [
    `gguf-fuzz: ${r.iterations} iterations over ${inputs.length} files (seed ${seed}) in ${(r.ms / 1000).toFixed(2)} s: ` +
      `${Math.round((r.iterations * 1000) / r.ms)} parses/s, slowest ${r.slowestMs.toFixed(1)} ms`,
    `  parsed ok: ${r.parsed}`,
    ...[...r.errors].sort((a, b) => b[1] - a[1]).map(([name, n]) => `  ${name}: ${n}`),
    `  escaped (not a KilnError, or a broken invariant): ${r.escapes.length}`,
    ...r.escapes.slice(0, 10).map((e) => `    #${e.iteration} ${e.input}, ${e.mutation}: ${e.error}`),
  ];
  process.stdout.write(out.join('\n') + '\n');
  if (r.escapes.length > 0) process.exitCode = 1;
}
