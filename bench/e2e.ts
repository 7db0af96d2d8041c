// `npm run bench -- e2e [--model FILE|SHAPE:TYPE,...] [--backend cpu|webgpu|cuda] [--threads N] [--runs 5] [--max-runs M]
//   [--swing 0.2]
//   [--vs llama.cpp,llama-bench,llama-bench-avx2,kiln@ADDON] [--level best|avx2] [--prompt 512] [--generate 128] [--kv f16|f32]
//   [--flash-attn auto|on|off] [--models-dir DIR]`:
// prefill tok/s (a 512-token prompt in one batch) and decode tok/s (128 tokens, at context depth
// 512 after that prompt and at depth 0), the median of --runs runs after one warm-up, with the
// peak RSS of each engine during decode. With peers and --max-runs above --runs, a row that swings
// gets more rounds, up to --max-runs: one where, for some peer and rate, the round-by-round ratios
// kiln / peer (each round's runs are neighbours in time) fall on both sides of 1 or spread by more
// than --swing of their median. Each kiln / peer row also shows the range of those ratios.
// With --vs llama.cpp the same file runs through
// node-llama-cpp 3.21.1 as a user installs it (its prebuilt CPU binaries, every variant kept, in
// .cache/node-llama-cpp-peer: it loads the best one for this CPU, and the bench prints which) in
// the same invocation, alternating kiln and llama.cpp run by run so that both see the same
// machine noise. With --vs llama-bench (or --vs llama.cpp,llama-bench) the peer is llama.cpp's own
// llama-bench built natively for this CPU (bench/llama-bench.ts builds it on demand), alternating
// the same way; llama-bench-avx2 is the one built for AVX2 only, the peer of --level avx2 (kiln's
// CPU kernels forced to their AVX2 tier, as `bench kernels --level` does). With --vs kiln@ADDON the
// peer is kiln itself with another build of the addon (a kiln.node file: the build before a change),
// alternating the same way, so two builds are compared on the same memory minute by minute.
// Each engine is its own child process (bench/e2e-engine.ts), so RSS is its own.
// Without --model: the four rows of issue 7 (TinyLlama-1.1B Q4_0/Q8_0/F16, Qwen2.5-0.5B Q8_0),
// written by bench/models.ts first if missing.
// Decode@0 is also shown as weight bytes per second against the read bandwidth: the best probe of
// the start and the end, and the probe taken just before and after each run (this VM's memory
// swings by half from minute to minute, so a run is also compared with the memory it ran on).
// Output: a table on the terminal (progress on stderr), bench/results/e2e-<time>.json and .svg.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GgmlType } from '../src/gguf/ggml-type.js';
import { openGguf } from '../src/gguf/open-gguf.js';
import { barChart } from './e2e-chart.js';
import { ensureLlamaBench, ensureLlamaBenchAvx2, installLlamaPeer, LlamaBenchEngine } from './llama-bench.js';
import { type EngineOptions, LLAMA_PACKAGE_ENTRY, type RunRequest, type RunResult, type Sampling } from './e2e-engine.js';
import { argValue, describeMachine, formatTable, machineInfo, measureLimits, median, probeReadNow, REPO_ROOT, warnAboutAddon } from './machine.js';
import { BENCH_TYPES, DEFAULT_MODEL_DIR, ensureBenchModel, SHAPES } from './models.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
const DEFAULT_MODELS = ['tinyllama:q4_0', 'tinyllama:q8_0', 'tinyllama:f16', 'qwen2:q8_0'];
type EngineName = EngineOptions['engine'] | 'llama-bench' | 'llama-bench-avx2' | `kiln@${string}`;
const PEERS: EngineName[] = ['llama.cpp', 'llama-bench', 'llama-bench-avx2'];
/** A peer `kiln@ADDON`: kiln with the addon at ADDON. */
const otherBuild = (e: EngineName): string | undefined => (e.startsWith('kiln@') ? e.slice('kiln@'.length) : undefined);

/** What the rounds drive: an engine process, or llama-bench invoked per run. */
interface BenchEngine {
  readonly name: EngineName;
  run(req: RunRequest): Promise<RunResult>;
  stop(): void;
}

/** A running engine process and its reply queue. */
class EngineProcess implements BenchEngine {
  private readonly replies: Array<(line: string) => void> = [];
  private readonly lines: string[] = [];
  private exited: string | null = null;

  /** node-llama-cpp only: the ggml CPU library it loaded. */
  variant?: string;

  private constructor(readonly name: EngineName, private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const waiter = this.replies.shift();
      if (waiter) waiter(line);
      else this.lines.push(line);
    });
    child.on('exit', (code, signal) => {
      this.exited = `the ${name} engine exited (${signal ?? `code ${code}`})`;
      for (const w of this.replies.splice(0)) w(JSON.stringify({ ok: false, ready: false, error: this.exited }));
    });
  }

  /** `addon`: another build of kiln's addon, for a kiln engine named `kiln@ADDON`. */
  static async start(options: EngineOptions, addon?: string): Promise<EngineProcess> {
    const env = addon === undefined ? process.env : { ...process.env, KILN_ADDON: resolve(addon) };
    const child = spawn(process.execPath, [join(HERE, 'e2e-engine.js'), JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'], env });
    const engine = new EngineProcess(addon === undefined ? options.engine : `kiln@${addon}`, child);
    const ready = JSON.parse(await engine.next()) as { ready: boolean; loadMs?: number; error?: string; variant?: string };
    if (!ready.ready) {
      engine.stop();
      throw new Error(`${options.engine} could not load ${options.model}: ${ready.error}`);
    }
    engine.variant = ready.variant;
    if (ready.variant) process.stderr.write(`${options.engine} loaded its CPU variant: libggml-cpu-${ready.variant}.so\n`);
    return engine;
  }

  private next(): Promise<string> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.exited) return Promise.resolve(JSON.stringify({ ok: false, ready: false, error: this.exited }));
    return new Promise((resolve) => this.replies.push(resolve));
  }

  async run(req: RunRequest): Promise<RunResult> {
    this.child.stdin!.write(JSON.stringify(req) + '\n');
    const reply = JSON.parse(await this.next()) as { ok: boolean; result?: RunResult; error?: string };
    if (!reply.ok) throw new Error(`${this.name}: ${reply.error}`);
    return reply.result!;
  }

  stop(): void {
    this.child.stdin!.end();
    this.child.kill();
  }
}

interface Rates {
  prefill: number;
  decodeShallow: number;
  decodeDeep: number;
  peakRssMiB: number;
  /** Read bandwidth probed just before and just after this run, the higher, GB/s. */
  readGBs?: number;
}

interface EngineSummary {
  engine: EngineName;
  /** Medians over the measured runs. */
  median: Rates;
  /** The fastest run of each rate: on a shared machine, the closest to an unloaded one. */
  best: Omit<Rates, 'peakRssMiB' | 'readGBs'>;
  /** (max - min) / median of each rate, the run-to-run spread. */
  spread: Omit<Rates, 'peakRssMiB' | 'readGBs'>;
  /** Median over runs of decode@0's weight bytes per second against the bandwidth probed around that run. */
  decodeShallowOfReadAtRun: number;
  runs: Rates[];
}

/** Each round's kiln / peer ratio (the two runs are neighbours in time): its lowest and highest. */
interface RatioRange {
  prefill: [number, number];
  decodeShallow: [number, number];
  decodeDeep: [number, number];
}

interface ModelSummary {
  model: string;
  /** Rounds measured (after the warm-up): --runs, or more where the row swung. */
  rounds: number;
  /** Per peer (engines[1...]), the range of its round-by-round ratios. */
  ratioRanges: RatioRange[];
  /** node-llama-cpp's CPU variant for this file, when it ran. */
  llamaCppVariant?: string;
  file: string;
  /** Weight bytes one decode step reads (every matrix but the embedding table, unless tied). */
  bytesPerToken: number;
  engines: EngineSummary[];
}

function rates(r: RunResult): Rates {
  return {
    prefill: (r.prefill.tokens / r.prefill.ms) * 1000,
    decodeShallow: (r.decodeShallow.tokens / r.decodeShallow.ms) * 1000,
    decodeDeep: (r.decodeDeep.tokens / r.decodeDeep.ms) * 1000,
    peakRssMiB: Math.max(r.decodeShallow.peakRssBytes, r.decodeDeep.peakRssBytes) / 2 ** 20,
  };
}

function summarize(engine: EngineName, runs: Rates[], bytesPerToken: number): EngineSummary {
  type Rate = Exclude<keyof Rates, 'readGBs'>;
  const pick = (k: Rate) => runs.map((r) => r[k]);
  const med = (k: Rate) => median(pick(k));
  const spread = (k: Rate) => (Math.max(...pick(k)) - Math.min(...pick(k))) / med(k);
  return {
    engine,
    median: { prefill: med('prefill'), decodeShallow: med('decodeShallow'), decodeDeep: med('decodeDeep'), peakRssMiB: med('peakRssMiB') },
    best: { prefill: Math.max(...pick('prefill')), decodeShallow: Math.max(...pick('decodeShallow')), decodeDeep: Math.max(...pick('decodeDeep')) },
    spread: { prefill: spread('prefill'), decodeShallow: spread('decodeShallow'), decodeDeep: spread('decodeDeep') },
    decodeShallowOfReadAtRun: median(runs.map((r) => (r.decodeShallow * bytesPerToken) / 1e9 / r.readGBs!)),
    runs,
  };
}

const RATES = ['prefill', 'decodeShallow', 'decodeDeep'] as const;
type RateName = (typeof RATES)[number];

/** Kiln's rate over the peer's, round by round (runs i of both were neighbours in time). */
const roundRatios = (kiln: Rates[], peer: Rates[], k: RateName): number[] => kiln.map((r, i) => r[k] / peer[i]![k]);

/** The range of kiln's / the peer's rates round by round. */
function ratioRange(kiln: Rates[], peer: Rates[]): RatioRange {
  const range = (k: RateName): [number, number] => {
    const ratios = roundRatios(kiln, peer, k);
    return [Math.min(...ratios), Math.max(...ratios)];
  };
  return { prefill: range('prefill'), decodeShallow: range('decodeShallow'), decodeDeep: range('decodeDeep') };
}

/** Whether some peer's round-by-round ratios fall on both sides of 1 or spread by more than `swing` of their median. */
function swings(kiln: Rates[], peers: Rates[][], swing: number): boolean {
  return peers.some((peer) => RATES.some((k) => {
    const ratios = roundRatios(kiln, peer, k);
    const lo = Math.min(...ratios), hi = Math.max(...ratios);
    return (lo < 1 && hi > 1) || (hi - lo) / median(ratios) > swing;
  }));
}

export function resolveModel(spec: string, modelsDir: string): { name: string; file: string } {
  if (spec.endsWith('.gguf')) {
    if (!existsSync(spec)) throw new Error(`model file ${spec} does not exist`);
    return { name: basename(spec, '.gguf'), file: spec };
  }
  const [shapeKey, type] = spec.split(':');
  const shape = SHAPES[shapeKey ?? ''];
  if (!shape || !type) throw new Error(`--model takes FILE.gguf or SHAPE:TYPE (${Object.keys(SHAPES).join('|')}:${Object.keys(BENCH_TYPES).join('|')}), got '${spec}'`);
  return { name: `${shape.title} ${type.toUpperCase()}`, file: ensureBenchModel(shape, type, { dir: modelsDir }) };
}

function bytesPerToken(file: string): number {
  const { file: gguf } = openGguf(file);
  const hasOutput = gguf.tensors.some((t) => t.name === 'output.weight');
  return gguf.tensors
    .filter((t) => t.dims.length >= 2 && t.dims[1]! > 1 && t.type !== GgmlType.F32 && (t.name !== 'token_embd.weight' || !hasOutput))
    .reduce((n, t) => n + t.byteSize, 0);
}

/**
 * Distinct prompts per run: a first token that differs from every earlier run's, so no cache is
 * reused. Ids stay inside the model's vocabulary (stories260K has 512 tokens).
 */
export function request(round: number, promptTokens: number, generate: number, vocab: number): RunRequest {
  let s = 0x9e3779b9 ^ round;
  const span = Math.min(20000, Math.max(1, vocab - 1000));
  const base = vocab > 21000 ? 1000 : 1;
  const rand = () => {
    s = (Math.imul(s, 1664525) + 1013904223) | 0;
    return (s >>> 8) % Math.min(span, vocab - base);
  };
  const prompt = Array.from({ length: promptTokens }, () => base + rand());
  prompt[0] = (300 + 2 * round) % vocab;
  return { cmd: 'run', prompt, start: (301 + 2 * round) % vocab, generate };
}

export function vocabSize(file: string): number {
  const embd = openGguf(file).file.tensors.find((t) => t.name === 'token_embd.weight');
  if (!embd || embd.dims.length < 2) throw new Error(`${file} has no token_embd.weight`);
  return embd.dims[1]!;
}

const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');
const pct = (v: number) => `${(100 * v).toFixed(0)}%`;

export async function run(args: string[]): Promise<void> {
  const threads = Number(argValue(args, '--threads') ?? 2);
  const backend = (argValue(args, '--backend') ?? 'cpu') as NonNullable<EngineOptions['backend']>;
  const runs = Number(argValue(args, '--runs') ?? 5);
  const maxRuns = Number(argValue(args, '--max-runs') ?? runs);
  const swing = Number(argValue(args, '--swing') ?? 0.2);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs takes a whole number of at least 1, got '${argValue(args, '--runs')}'`);
  if (!Number.isInteger(maxRuns) || maxRuns < runs) throw new Error(`--max-runs takes a whole number of at least --runs (${runs}), got '${argValue(args, '--max-runs')}'`);
  if (!(swing > 0)) throw new Error(`--swing takes a fraction above 0 (0.2: 20% of the median ratio), got '${argValue(args, '--swing')}'`);
  const promptTokens = Number(argValue(args, '--prompt') ?? 512);
  const generate = Number(argValue(args, '--generate') ?? 128);
  const kvCacheType = (argValue(args, '--kv') ?? 'f16') as 'f16' | 'f32';
  const flashAttention = (argValue(args, '--flash-attn') ?? 'auto') as EngineOptions['flashAttention'];
  const sampling: Sampling = {
    temperature: Number(argValue(args, '--temperature') ?? 0),
    topK: Number(argValue(args, '--top-k') ?? 0),
    topP: Number(argValue(args, '--top-p') ?? 1),
  };
  if (!(sampling.temperature >= 0) || !(Number.isInteger(sampling.topK) && sampling.topK >= 0) || !(sampling.topP > 0 && sampling.topP <= 1)) {
    throw new Error(`--temperature takes a number >= 0, --top-k an integer >= 0 (0: off), --top-p a number in (0, 1] (1: off)`);
  }
  const modelsDir = argValue(args, '--models-dir') ?? DEFAULT_MODEL_DIR;
  const level = (argValue(args, '--level') ?? 'best') as NonNullable<EngineOptions['level']>;
  if (level !== 'best' && level !== 'avx2') throw new Error(`--level takes best or avx2, got '${level}'`);
  const vs = argValue(args, '--vs');
  const peers = (vs?.split(',') ?? []) as EngineName[];
  for (const p of peers) {
    if (PEERS.includes(p)) continue;
    const addon = otherBuild(p);
    if (addon === undefined) throw new Error(`--vs takes ${PEERS.join(', ')} or kiln@ADDON (comma-separated), got '${vs}'`);
    if (!existsSync(addon)) throw new Error(`--vs ${p}: no addon at ${resolve(addon)}`);
  }
  const specs = argValue(args, '--model')?.split(',') ?? DEFAULT_MODELS;
  const engines: EngineName[] = ['kiln', ...peers];
  const llamaPeers = peers.some((p) => otherBuild(p) === undefined);
  if (llamaPeers) installLlamaPeer();

  const machine = machineInfo();
  warnAboutAddon(machine);
  process.stderr.write('measuring the machine (read bandwidth, FMA peak)...\n');
  let limits = await measureLimits(threads, 1);
  console.log(`kiln backend ${backend}${level === 'avx2' ? ' (kernels forced to the AVX2 tier)' : ''}, ${machine.cpu}, ${threads} threads, prompt ${promptTokens} tokens in one batch, ${generate} decoded tokens, KV cache ${kvCacheType}, ` +
    `${runs}${maxRuns > runs ? ` (up to ${maxRuns} where a row swings by more than ${pct(swing)} or across 1.0)` : ''} runs after a warm-up${peers.length ? `, ${llamaPeers ? `llama.cpp flash attention ${flashAttention}, ` : ''}alternating ${engines.join(' / ')}` : ''}`);
  if (sampling.temperature > 0) {
    console.log(`decoded tokens sampled at temperature ${sampling.temperature}, top-k ${sampling.topK || 'off'}, top-p ${sampling.topP === 1 ? 'off' : sampling.topP} (kiln and node-llama-cpp, seeded)` +
      `${engines.some((e) => e.startsWith('llama-bench')) ? '; llama-bench never samples (its decode is the forward steps alone)' : ''}`);
  }

  const summaries: ModelSummary[] = [];
  let llamaBench: string | undefined;
  let llamaBenchAvx2: string | undefined;
  for (const spec of specs) {
    const { name, file } = resolveModel(spec, modelsDir);
    const vocab = vocabSize(file);
    if (peers.includes('llama-bench')) llamaBench ??= ensureLlamaBench(file, modelsDir);
    if (peers.includes('llama-bench-avx2')) llamaBenchAvx2 ??= ensureLlamaBenchAvx2(file, modelsDir);
    const options = (engine: EngineOptions['engine']): EngineOptions => ({
      engine, backend, level, model: file, threads, contextSize: promptTokens + generate + 16, batch: promptTokens, kvCacheType, flashAttention, sampling,
    });
    const procs: BenchEngine[] = [];
    try {
      for (const e of engines) {
        procs.push(e === 'llama-bench' ? new LlamaBenchEngine(e, llamaBench!, options('llama.cpp'))
          : e === 'llama-bench-avx2' ? new LlamaBenchEngine(e, llamaBenchAvx2!, options('llama.cpp'))
          : e.startsWith('kiln@') ? await EngineProcess.start(options('kiln'), otherBuild(e))
          : await EngineProcess.start(options(e as EngineOptions['engine'])));
      }
      const results = new Map<EngineName, Rates[]>(engines.map((e) => [e, []]));
      const measured = () => engines.map((e) => results.get(e)!);
      for (let round = 0; round <= runs || (round <= maxRuns && swings(measured()[0]!, measured().slice(1), swing)); round++) {
        const req = request(round, promptTokens, generate, vocab);
        for (const p of procs) {
          const before = round > 0 ? await probeReadNow(threads) : 0;
          const r = rates(await p.run(req));
          if (round > 0) r.readGBs = Math.max(before, await probeReadNow(threads));
          const label = round === 0 ? 'warm-up' : round <= runs ? `run ${round}/${runs}` : `run ${round}/${maxRuns}`;
          process.stderr.write(`${name} ${p.name.padEnd(9)} ${label.padEnd(9)} prefill ${fmt(r.prefill)} tok/s, decode@0 ${fmt(r.decodeShallow)}, decode@${promptTokens} ${fmt(r.decodeDeep)} tok/s, RSS ${fmt(r.peakRssMiB, 0)} MiB` +
            `${r.readGBs ? `, read ${fmt(r.readGBs)} GB/s around it` : ''}\n`);
          if (round > 0) results.get(p.name)!.push(r);
        }
      }
      const llamaCppVariant = procs.find((p): p is EngineProcess => p instanceof EngineProcess && p.variant !== undefined)?.variant;
      const bytes = bytesPerToken(file);
      const [kilnRuns, ...peerRuns] = measured();
      summaries.push({
        model: name, file, llamaCppVariant, bytesPerToken: bytes, rounds: kilnRuns!.length,
        ratioRanges: peerRuns.map((r) => ratioRange(kilnRuns!, r)), engines: engines.map((e) => summarize(e, results.get(e)!, bytes)),
      });
    } finally {
      for (const p of procs) p.stop();
    }
  }

  // Measured again at the end and the better kept: a probe disturbed by other work reads low.
  const again = await measureLimits(threads, 1);
  limits = { threads, readGBs: Math.max(limits.readGBs, again.readGBs), fmaGFlops: Math.max(limits.fmaGFlops, again.fmaGFlops) };
  console.log('\n' + describeMachine(machine, limits));
  const header = ['model', 'engine', 'prefill tok/s', 'decode@0 tok/s', `decode@${promptTokens} tok/s`, 'peak RSS MiB', 'decode@0 GB/s', 'decode@0 of BW limit', 'of BW at its runs'];
  const rows: string[][] = [];
  for (const m of summaries) {
    for (const e of m.engines) {
      const x = e.median, s = e.spread;
      const label = e.engine === 'llama.cpp' && m.llamaCppVariant ? `llama.cpp (${m.llamaCppVariant})` : e.engine;
      rows.push([m.model, label, `${fmt(x.prefill)} ±${pct(s.prefill / 2)}`, `${fmt(x.decodeShallow)} ±${pct(s.decodeShallow / 2)}`,
        `${fmt(x.decodeDeep)} ±${pct(s.decodeDeep / 2)}`, fmt(x.peakRssMiB, 0), fmt((x.decodeShallow * m.bytesPerToken) / 1e9),
        pct((x.decodeShallow * m.bytesPerToken) / 1e9 / limits.readGBs), pct(e.decodeShallowOfReadAtRun)]);
    }
    m.engines.slice(1).forEach((peer, p) => {
      const [k, l, range] = [m.engines[0]!.median, peer.median, m.ratioRanges[p]!];
      const ratio = (key: RateName) => `${fmt(k[key] / l[key], 2)}x (${fmt(range[key][0], 2)}-${fmt(range[key][1], 2)})`;
      rows.push([m.rounds > runs ? `${m.model}, ${m.rounds} runs` : m.model, `kiln / ${peer.engine}`, ratio('prefill'), ratio('decodeShallow'),
        ratio('decodeDeep'), `${fmt(k.peakRssMiB / l.peakRssMiB, 2)}x`, '', '', '']);
      const [kb, lb] = [m.engines[0]!.best, peer.best];
      rows.push([m.model, '  best / best', `${fmt(kb.prefill / lb.prefill, 2)}x`, `${fmt(kb.decodeShallow / lb.decodeShallow, 2)}x`,
        `${fmt(kb.decodeDeep / lb.decodeDeep, 2)}x`, '', '', '', '']);
    });
  }
  console.log('\n' + formatTable(header, rows));
  console.log(`\nmedians of ${runs} runs${maxRuns > runs ? ' (more where the row says so)' : ''}; ± is half the run-to-run range; kiln / peer: the ratio of the medians, ` +
    `in brackets the lowest and highest ratio of one round's runs; "best / best" compares each engine's fastest run.`);
  console.log(`"GB/s": decode@0 tok/s x weight bytes per token; "of BW limit": that / ${limits.readGBs.toFixed(1)} GB/s, the best CPU read bandwidth measured at the start and the end;`);
  console.log('"of BW at its runs": the median over runs of each run\'s decode@0 GB/s / the read bandwidth probed just before and after that run (the higher).');

  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const json = join(RESULTS_DIR, `e2e-${stamp}.json`);
  const settings = { backend, level, threads, runs, maxRuns, swing, promptTokens, generate, kvCacheType, flashAttention: peers.length ? flashAttention : undefined, sampling, llamaBench, llamaBenchAvx2 };
  writeFileSync(json, JSON.stringify({ machine, limits, settings, models: summaries }, null, 2) + '\n');
  const svg = join(RESULTS_DIR, `e2e-${stamp}.svg`);
  const colors: Record<string, string> = { kiln: '#d9480f', 'llama.cpp': '#1c7ed6', 'llama-bench': '#2f9e44', 'llama-bench-avx2': '#66a80f' };
  const variants = [...new Set(summaries.map((m) => m.llamaCppVariant).filter((v) => v !== undefined))].join(', ');
  const peerTitle: Record<string, string> = {
    kiln: 'kiln', 'llama.cpp': `llama.cpp (node-llama-cpp 3.21.1, its ${variants} CPU build)`,
    'llama-bench': 'llama-bench (native build)', 'llama-bench-avx2': 'llama-bench (AVX2-only build)',
  };
  writeFileSync(svg, barChart(
    `kiln${level === 'avx2' ? ' (AVX2 tier)' : ''}${peers.length ? ` vs ${peers.map((p) => peerTitle[p] ?? `kiln with ${otherBuild(p)}`).join(' and ')}` : ''}: tokens per second, higher is better`,
    `${machine.cpu}, ${threads} threads, KV ${kvCacheType}; median of ${runs}${maxRuns > runs ? `-${Math.max(...summaries.map((m) => m.rounds))}` : ''} runs`,
    ['prefill (512-token prompt)', 'decode at depth 0', `decode at depth ${promptTokens}`],
    engines.map((e) => ({ label: e, color: colors[e] ?? '#868e96' })),
    summaries.map((m) => ({
      label: m.model,
      values: [
        m.engines.map((e) => e.median.prefill),
        m.engines.map((e) => e.median.decodeShallow),
        m.engines.map((e) => e.median.decodeDeep),
      ],
    })),
  ));
  console.log(`wrote ${json}\nwrote ${svg}`);
}
