// `npm run bench -- kernels [--backend cpu] [--threads N] [--seconds S] [--buffer-mb M] [--op NAME] [--dtype a,b]
//   [--level generic|avx2|best] [--batch-tokens 2,4,8]` (--level: the CPU kernel tier; avx2 leaves the AVX-512
//   kernels out; --batch-tokens: the token counts of the small-batch products, default 4):
// every op x dtype x backend, next to the machine's measured limits. Matrix-vector products
// (decode shape) and small batches (a continuous-batching step's few decode rows, weights from memory
// as in decode) report GB/s of weight bytes and their fraction of the measured read bandwidth;
// matrix-matrix products (prefill shape, 512 tokens) report GFLOP/s and their fraction of the FMA
// peak. Each case is a plan of K identical ops over the same inputs, run through the Backend
// interface exactly as a model runs; a plan without the K ops is timed too and subtracted, which
// removes the cost of the inputs and of the forward call. Decode-shape products cycle through
// copies of the weights larger than the caches, so weights come from memory as in a real decode;
// a buffer smaller than the caches (--buffer-mb 1) times the kernels themselves, at least
// MIN_VECTOR_OPS products per step over the one cache-resident copy (one product per step left the
// timer's own noise at +-10%).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend, BackendName } from '../src/backend/backend.js';
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { WebGpuBackend } from '../src/backend/webgpu/webgpu-backend.js';
import { GgmlType, GGML_TYPES, rowBytes } from '../src/gguf/ggml-type.js';
import { GraphBuilder, type WeightData } from '../src/model/graph.js';
import { native } from '../src/native/binding.js';
import { argValue, describeMachine, formatTable, machineInfo, measureLimits, median, randomFloats, REPO_ROOT, type MachineLimits, warnAboutAddon } from './machine.js';

/** Every backend the bench knows: a new backend is one entry here. */
const BACKENDS: Record<BackendName, (() => Backend) | null> = {
  cpu: () => new CpuBackend(),
  webgpu: () => new WebGpuBackend(),
  cuda: null,
};

// TinyLlama-1.1B's shapes: the FFN up projection and the attention geometry.
const DIM = 2048;
const FFN = 5632;
const HEADS = 32;
const KV_HEADS = 4;
const HEAD_DIM = 64;
const PREFILL = 512;
const DEPTH = 512;
// Matrix-vector products per timed step, however few copies of the weights the buffer holds.
const MIN_VECTOR_OPS = 16;

type Limit = 'bandwidth' | 'fma';

/** One benchmark case: K copies of an op over shared inputs. */
interface Case {
  op: string;
  dtype: string;
  shape: string;
  tokens: number;
  positions: number[];
  /** Builds the inputs and, when k > 0, k copies of the op; returns the output tensor. */
  build(g: GraphBuilder, k: number): number;
  k: number;
  /** Work of one op: bytes for bandwidth-limited cases, flops for compute-limited ones. */
  work: number;
  limit: Limit;
  kvCacheType?: 'f32' | 'f16';
}

interface Row {
  op: string;
  dtype: string;
  shape: string;
  backend: BackendName;
  threads: number;
  microseconds: number;
  rate: number;
  unit: 'GB/s' | 'GFLOP/s';
  fractionOfLimit: number;
}

const data = (v: ArrayBufferView): WeightData => ({ buffer: v.buffer as ArrayBuffer, byteOffset: v.byteOffset, byteLength: v.byteLength });

/** An F32 table whose rows feed the ops as activations (token id i reads row i). */
function activations(g: GraphBuilder, name: string, cols: number, rows: number, seed: number): number {
  const table = g.constant(`${name}_table`, GgmlType.F32, cols, rows, data(randomFloats(rows * cols, seed)));
  return g.getRows(name, table, g.tokens());
}

function weightTypes(): GgmlType[] {
  return native().typeTable().filter((t) => t.isWeightType).map((t) => t.type as GgmlType);
}

/** Remembers the last value only, so the cases of one dtype share their buffers and a gigabyte per dtype is never held at once. */
function lastOnly<K, V>(make: (key: K) => V): (key: K) => V {
  let last: { key: K; value: V } | undefined;
  return (key) => {
    if (!last || last.key !== key) last = { key, value: make(key) };
    return last.value;
  };
}

interface WeightCopies { bytes: Uint8Array; matrixBytes: number; copies: number }

/** One (rows, cols) matrix in `type`, repeated until the buffer holds at least `minBytes`. */
function weightCopies(type: GgmlType, rows: number, cols: number, minBytes: number): WeightCopies {
  const matrixBytes = rowBytes(type, cols) * rows;
  const one = new Uint8Array(matrixBytes);
  // Spread so that x @ W^T keeps the activations' scale.
  native().quantize(type, randomFloats(rows * cols, 17 + type, Math.sqrt(3 / cols)), one);
  const copies = Math.max(1, Math.ceil(minBytes / matrixBytes));
  const bytes = new Uint8Array(matrixBytes * copies);
  for (let c = 0; c < copies; c++) bytes.set(one, c * matrixBytes);
  return { bytes, matrixBytes, copies };
}

function mulMatCases(bufferBytes: number, only: string | undefined, batchTokens: number[]): Case[] {
  if (only && only !== 'mul_mat') return [];
  const cases: Case[] = [];
  const weights = lastOnly((type: GgmlType) => weightCopies(type, FFN, DIM, bufferBytes));
  for (const type of weightTypes()) {
    const name = GGML_TYPES[type].name;
    const ops = Math.max(MIN_VECTOR_OPS, Math.ceil(bufferBytes / (rowBytes(type, DIM) * FFN)));
    const matrices = (g: GraphBuilder, k: number, x: number) => {
      const decode = weights(type);
      let out = x;
      for (let c = 0; c < k; c++) {
        const w = g.constant(`w${c}`, type, DIM, FFN, {
          buffer: decode.bytes.buffer as ArrayBuffer, byteOffset: (c % decode.copies) * decode.matrixBytes, byteLength: decode.matrixBytes,
        });
        out = g.mulMat(`y${c}`, w, x);
      }
      return out;
    };
    cases.push({
      op: 'mul_mat', dtype: name, shape: `decode 1x${DIM} -> ${FFN}`, tokens: 1, positions: [0], k: ops,
      build: (g, k) => matrices(g, k, activations(g, 'x', DIM, 1, 1)),
      work: rowBytes(type, DIM) * FFN, limit: 'bandwidth',
    });
    for (const tokens of batchTokens) {
      cases.push({
        op: 'mul_mat', dtype: name, shape: `batch ${tokens}x${DIM} -> ${FFN}`, tokens, positions: range(tokens), k: ops,
        build: (g, k) => matrices(g, k, activations(g, 'x', DIM, tokens, 1)),
        work: rowBytes(type, DIM) * FFN, limit: 'bandwidth',
      });
    }
    cases.push({
      op: 'mul_mat', dtype: name, shape: `prefill ${PREFILL}x${DIM} -> ${FFN}`, tokens: PREFILL, positions: range(PREFILL), k: 2,
      build: (g, k) => matrices(g, k, activations(g, 'x', DIM, PREFILL, 1)),
      work: 2 * FFN * DIM * PREFILL, limit: 'fma',
    });
  }
  return cases;
}

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Elementwise and normalization ops at decode (1 token) and prefill (512 tokens) shapes. */
function opCases(only: string | undefined): Case[] {
  const cases: Case[] = [];
  const tableRows = 4096;
  const tables = lastOnly((type: GgmlType) => {
    const table = new Uint8Array(rowBytes(type, DIM) * tableRows);
    native().quantize(type, randomFloats(tableRows * DIM, 9), table);
    return table;
  });
  const shapes = [
    { label: 'decode', tokens: 1, k: 64 },
    { label: 'prefill', tokens: PREFILL, k: 8 },
  ];
  for (const s of shapes) {
    const positions = range(s.tokens);
    const repeat = (g: GraphBuilder, k: number, inputs: number, op: (c: number) => number) => {
      let out = inputs;
      for (let c = 0; c < k; c++) out = op(c);
      return out;
    };
    cases.push({
      op: 'rms_norm', dtype: 'f32', shape: `${s.label} ${s.tokens}x${DIM}`, tokens: s.tokens, positions, k: s.k, limit: 'bandwidth',
      work: 2 * 4 * s.tokens * DIM,
      build: (g, k) => {
        const x = activations(g, 'x', DIM, s.tokens, 2);
        const w = g.constant('norm', GgmlType.F32, DIM, 1, data(randomFloats(DIM, 3)));
        return repeat(g, k, x, (c) => g.rmsNorm(`y${c}`, x, w, 1e-5));
      },
    });
    cases.push({
      op: 'add', dtype: 'f32', shape: `${s.label} ${s.tokens}x${DIM}`, tokens: s.tokens, positions, k: s.k, limit: 'bandwidth',
      work: 3 * 4 * s.tokens * DIM,
      build: (g, k) => {
        const a = activations(g, 'a', DIM, s.tokens, 4);
        const b = activations(g, 'b', DIM, s.tokens, 5);
        return repeat(g, k, b, (c) => g.add(`y${c}`, a, b));
      },
    });
    cases.push({
      op: 'swiglu', dtype: 'f32', shape: `${s.label} ${s.tokens}x${FFN}`, tokens: s.tokens, positions, k: s.k, limit: 'bandwidth',
      work: 3 * 4 * s.tokens * FFN,
      build: (g, k) => {
        const gate = activations(g, 'gate', FFN, s.tokens, 6);
        const up = activations(g, 'up', FFN, s.tokens, 7);
        return repeat(g, k, up, (c) => g.swiglu(`y${c}`, gate, up));
      },
    });
    for (const neox of [false, true]) {
      cases.push({
        op: 'rope', dtype: neox ? 'f32 neox' : 'f32', shape: `${s.label} ${s.tokens}x${HEADS}x${HEAD_DIM}`, tokens: s.tokens, positions, k: s.k,
        limit: 'bandwidth', work: 2 * 4 * s.tokens * DIM,
        build: (g, k) => {
          const x = activations(g, 'x', DIM, s.tokens, 8);
          return repeat(g, k, x, (c) => g.rope(`y${c}`, x, { nHeads: HEADS, headDim: HEAD_DIM, nRot: HEAD_DIM, neox, freqBase: 10000, freqScale: 1 }));
        },
      });
    }
    for (const type of weightTypes()) {
      const name = GGML_TYPES[type].name;
      cases.push({
        op: 'get_rows', dtype: name, shape: `${s.label} ${s.tokens} of ${tableRows}x${DIM}`, tokens: s.tokens,
        positions, k: s.k, limit: 'bandwidth', work: s.tokens * (rowBytes(type, DIM) + 4 * DIM),
        build: (g, k) => {
          const tokens = g.tokens();
          const t = g.constant('table', type, DIM, tableRows, data(tables(type)));
          // The baseline needs an output too: a one-row table read.
          const base = g.getRows('base', g.constant('base_table', GgmlType.F32, 1, tableRows, data(new Float32Array(tableRows))), tokens);
          return repeat(g, k, base, (c) => g.getRows(`y${c}`, t, tokens));
        },
      });
    }
  }
  // Attention over the KV cache: one query at depth 512 (decode), or 512 causal queries (prefill).
  const kvWidth = KV_HEADS * HEAD_DIM;
  for (const kv of ['f32', 'f16'] as const) {
    const elem = kv === 'f32' ? 4 : 2;
    const attention = (tokens: number) => (g: GraphBuilder, k: number) => {
      const q = activations(g, 'q', DIM, tokens, 10);
      const kk = activations(g, 'k', kvWidth, tokens, 11);
      const v = activations(g, 'v', kvWidth, tokens, 12);
      let out = q;
      for (let c = 0; c < k; c++) out = g.attention(`y${c}`, q, kk, v, { layer: c, nHeads: HEADS, nKvHeads: KV_HEADS, headDim: HEAD_DIM, scale: 1 / 8 });
      return out;
    };
    cases.push({
      op: 'attention', dtype: `kv ${kv}`, shape: `decode 1 at depth ${DEPTH}, ${HEADS}/${KV_HEADS} heads`, tokens: 1, positions: [DEPTH], k: 22,
      limit: 'bandwidth', work: 2 * (DEPTH + 1) * kvWidth * elem, build: attention(1), kvCacheType: kv,
    });
    cases.push({
      op: 'attention', dtype: `kv ${kv}`, shape: `prefill ${PREFILL} causal, ${HEADS}/${KV_HEADS} heads`, tokens: PREFILL, positions: range(PREFILL), k: 4,
      limit: 'fma', work: 4 * HEADS * HEAD_DIM * ((PREFILL * (PREFILL + 1)) / 2), build: attention(PREFILL), kvCacheType: kv,
    });
  }
  return only ? cases.filter((c) => c.op === only) : cases;
}

/** Median seconds of one forward step of `graph`, over at least 5 steps and about `seconds`. */
async function timeForward(backend: Backend, c: Case, k: number, threads: number, seconds: number): Promise<number> {
  const g = new GraphBuilder();
  const graph = g.build(c.build(g, k));
  const kvCacheType = c.kvCacheType ?? 'f32';
  const compiled = await backend.compile(graph, { slots: 1, contextSize: DEPTH + PREFILL, maxBatch: c.tokens, kvCacheType, threads });
  try {
    const tokens = Int32Array.from(range(c.tokens));
    const positions = Int32Array.from(c.positions);
    const out = new Float32Array(c.tokens * compiled.outputWidth);
    await compiled.forward(tokens, positions, 0, false, out);
    const times: number[] = [];
    const start = performance.now();
    while (times.length < 5 || (performance.now() - start < seconds * 1000 && times.length < 1000)) {
      const t0 = performance.now();
      await compiled.forward(tokens, positions, 0, false, out);
      times.push((performance.now() - t0) / 1000);
    }
    return median(times);
  } finally {
    compiled.dispose();
  }
}

async function measure(backendName: BackendName, backend: Backend, c: Case, threads: number, seconds: number, limits: MachineLimits): Promise<Row> {
  const base = await timeForward(backend, c, 0, threads, seconds / 2);
  const full = await timeForward(backend, c, c.k, threads, seconds);
  const perOp = Math.max(full - base, 1e-9) / c.k;
  const bandwidth = c.limit === 'bandwidth';
  const rate = c.work / perOp / 1e9;
  return {
    op: c.op, dtype: c.dtype, shape: c.shape, backend: backendName, threads,
    microseconds: perOp * 1e6,
    rate,
    unit: bandwidth ? 'GB/s' : 'GFLOP/s',
    fractionOfLimit: rate / (bandwidth ? limits.readGBs : limits.fmaGFlops),
  };
}

function formatRow(r: Row): string[] {
  const time = r.microseconds >= 10000 ? `${(r.microseconds / 1000).toFixed(1)} ms` : `${r.microseconds.toFixed(1)} us`;
  return [r.op, r.dtype, r.shape, r.backend, String(r.threads), time, `${r.rate.toFixed(1)} ${r.unit}`, `${(100 * r.fractionOfLimit).toFixed(0)}%`];
}

export async function run(args: string[]): Promise<void> {
  const threads = Number(argValue(args, '--threads') ?? native().cpuFeatures().physicalCores);
  const seconds = Number(argValue(args, '--seconds') ?? 1);
  const bufferBytes = Number(argValue(args, '--buffer-mb') ?? 1024) * 2 ** 20;
  const only = argValue(args, '--op');
  const wanted = argValue(args, '--backend');
  const dtypes = argValue(args, '--dtype')?.split(',');
  const level = (argValue(args, '--level') ?? 'best') as 'generic' | 'avx2' | 'best';
  const batchTokens = (argValue(args, '--batch-tokens') ?? '4').split(',').map(Number);
  native().setKernelLevel(level);
  const backends = (Object.keys(BACKENDS) as BackendName[]).filter((b) => BACKENDS[b] && (!wanted || wanted === b));
  if (wanted && !BACKENDS[wanted as BackendName]) throw new Error(`backend '${wanted}' is not in this build; present: ${backends.join(', ')}`);

  const machine = machineInfo();
  warnAboutAddon(machine);
  process.stderr.write('measuring the machine (read bandwidth, FMA peak)...\n');
  const limits = await measureLimits(threads);
  console.log(describeMachine(machine, limits));

  const rows: Row[] = [];
  const cases = [...mulMatCases(bufferBytes, only, batchTokens), ...opCases(only)].filter((c) => !dtypes || dtypes.includes(c.dtype));
  const header = ['op', 'dtype', 'shape', 'backend', 'threads', 'time/op', 'rate', 'of limit'];
  for (const name of backends) {
    const backend = BACKENDS[name]!();
    for (const [i, c] of cases.entries()) {
      process.stderr.write(`[${i + 1}/${cases.length}] ${name} ${c.op} ${c.dtype} ${c.shape}\n`);
      try {
        rows.push(await measure(name, backend, c, threads, seconds, limits));
      } catch (err) {
        // A backend in the build may have no device here (WebGPU without an adapter): say so once, go on.
        if (i > 0 || wanted === name) throw err;
        console.log(`${name}: skipped, ${(err as Error).message}`);
        break;
      }
    }
  }
  console.log('\n' + formatTable(header, rows.map(formatRow)));
  console.log('\nof limit: GB/s rows against the measured read bandwidth, GFLOP/s rows against the FP32 FMA peak.');

  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `kernels-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ machine, limits, rows }, null, 2) + '\n');
  console.log(`wrote ${file}`);
}
