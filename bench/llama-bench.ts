// `npm run bench -- llama-bench [--model FILE]`: builds llama.cpp's own `llama-bench` natively (GGML_NATIVE=ON: every
// instruction set this CPU has, AVX-512 and AMX included where present) from the llama.cpp source
// that node-llama-cpp 3.21.1 ships (`llama/gitRelease.bundle`, a git bundle), into a cache folder
// outside the repository, and prints its path. `e2e --vs llama-bench` runs it side by side with kiln.
// `--avx2` builds (and prints) the AVX2-only one instead (GGML_NATIVE=OFF, AVX2/FMA/F16C, no
// AVX-512), the peer of kiln forced to its AVX2 tier: `e2e --level avx2 --vs llama-bench-avx2`.
// Building takes several minutes on 2 cores and happens once per llama.cpp commit and kind.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { EngineOptions, RunRequest, RunResult } from './e2e-engine.js';
import { LLAMA_PACKAGE_ENTRY } from './e2e-engine.js';
import { argValue, REPO_ROOT } from './machine.js';
import { DEFAULT_MODEL_DIR, ensureBenchModel, SHAPES } from './models.js';

const BUNDLE = join(LLAMA_PACKAGE_ENTRY, '..', '..', 'llama', 'gitRelease.bundle');

function sh(cmd: string, args: string[], cwd?: string): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${(r.stderr || r.stdout).slice(-4000)}`);
  return r.stdout;
}

const NO_AMX = ['-mno-amx-tile', '-mno-amx-int8', '-mno-amx-bf16'].join(' ');

const AVX2_ONLY = ['-DGGML_NATIVE=OFF', '-DGGML_AVX=ON', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_F16C=ON'];

/** Builds llama-bench in `dir` unless it is there: natively, or with `isa` (cmake -D flags) instead. */
function build(dir: string, extraFlags: string | null, isa: string[] = ['-DGGML_NATIVE=ON']): string {
  const binary = join(dir, 'src', 'build', 'bin', 'llama-bench');
  if (existsSync(binary)) return binary;
  process.stderr.write(`building llama-bench (${isa.join(' ')}${extraFlags ? `, ${extraFlags}` : ''}) in ${dir}; this takes several minutes ...\n`);
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  sh('git', ['clone', '--quiet', BUNDLE, 'src'], dir);
  const src = join(dir, 'src');
  const flags = extraFlags ? [`-DCMAKE_C_FLAGS=${extraFlags}`, `-DCMAKE_CXX_FLAGS=${extraFlags}`] : [];
  sh('cmake', ['-S', '.', '-B', 'build', '-DCMAKE_BUILD_TYPE=Release', ...isa, '-DLLAMA_CURL=OFF', '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_SERVER=OFF', '-DBUILD_SHARED_LIBS=OFF', ...flags], src);
  const r = spawnSync('cmake', ['--build', 'build', '--target', 'llama-bench', '-j', String(availableParallelism())], { cwd: src, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0 || !existsSync(binary)) throw new Error(`building llama-bench failed (${r.status ?? r.signal})`);
  return binary;
}

/**
 * llama.cpp's `llama-batched-bench` and `llama-server`, built natively from the same bundle as
 * llama-bench (without AMX where llama-bench found it faulting), into their own cache folder;
 * returns both paths. `avx2`: built for AVX2/FMA/F16C only instead, the peer of kiln forced to its
 * AVX2 tier. Several minutes on 2 cores, once per llama.cpp commit.
 */
export function ensureLlamaTools(model: string, cacheDir = DEFAULT_MODEL_DIR, avx2 = false): { batchedBench: string; server: string } {
  if (avx2) ensureLlamaBenchAvx2(model, cacheDir);
  else ensureLlamaBench(model, cacheDir);
  const commit = sh('git', ['bundle', 'list-heads', BUNDLE]).trim().split(/\s+/)[0]!.slice(0, 8);
  const noAmx = !avx2 && existsSync(join(cacheDir, `llama-bench-${commit}`, 'amx-faults'));
  const dir = join(cacheDir, `llama-tools-${commit}${avx2 ? '-avx2' : noAmx ? '-noamx' : ''}`);
  const bin = (name: string) => join(dir, 'src', 'build', 'bin', name);
  if (existsSync(bin('llama-batched-bench')) && existsSync(bin('llama-server'))) return { batchedBench: bin('llama-batched-bench'), server: bin('llama-server') };
  const isa = avx2 ? AVX2_ONLY : ['-DGGML_NATIVE=ON'];
  process.stderr.write(`building llama-batched-bench and llama-server (${isa.join(' ')}${noAmx ? `, ${NO_AMX}` : ''}) in ${dir}; this takes several minutes ...\n`);
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  sh('git', ['clone', '--quiet', BUNDLE, 'src'], dir);
  const src = join(dir, 'src');
  const flags = noAmx ? [`-DCMAKE_C_FLAGS=${NO_AMX}`, `-DCMAKE_CXX_FLAGS=${NO_AMX}`] : [];
  sh('cmake', ['-S', '.', '-B', 'build', '-DCMAKE_BUILD_TYPE=Release', ...isa, '-DLLAMA_CURL=OFF', '-DLLAMA_BUILD_TESTS=OFF',
    '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_TOOLS=ON', '-DLLAMA_BUILD_SERVER=ON', '-DBUILD_SHARED_LIBS=OFF', ...flags], src);
  const r = spawnSync('cmake', ['--build', 'build', '--target', 'llama-batched-bench', 'llama-server', '-j', String(availableParallelism())], { cwd: src, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0 || !existsSync(bin('llama-batched-bench')) || !existsSync(bin('llama-server'))) throw new Error(`building llama-batched-bench and llama-server failed (${r.status ?? r.signal})`);
  return { batchedBench: bin('llama-batched-bench'), server: bin('llama-server') };
}

/** Whether `binary` survives a 16-token prefill and one decoded token of `model`. */
function smokeTest(binary: string, model: string): { ok: boolean; why: string } {
  const r = spawnSync(binary, ['-m', model, '-t', '1', '-p', '16', '-n', '1', '-r', '1', '-o', 'json'], { encoding: 'utf8', maxBuffer: 16 << 20 });
  return { ok: r.status === 0, why: r.signal ?? `exit code ${r.status}` };
}

/** Installs node-llama-cpp as a user does (the peer, and the source of the llama.cpp bundle), once. */
export function installLlamaPeer(): void {
  if (existsSync(LLAMA_PACKAGE_ENTRY) && existsSync(BUNDLE)) return;
  process.stderr.write('installing node-llama-cpp 3.21.1 into .cache/node-llama-cpp-peer ...\n');
  const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'install-llama-oracle.mjs'), '--peer'], { stdio: 'inherit' });
  if (r.status !== 0 || !existsSync(BUNDLE)) throw new Error('installing node-llama-cpp failed (see above)');
}

/**
 * The path of a native llama-bench for the bundled llama.cpp commit, built first if missing.
 * A CPU that reports AMX gets AMX kernels from -march=native; where the OS or hypervisor does
 * not really provide AMX (its first `ldtilecfg` faults: seen on a Sapphire Rapids VM whose CPUID
 * and XCR0 both claim it), that build dies on its first quantized matrix product, so it is
 * smoke-tested on `model` and, if it dies, rebuilt with AMX turned off (-mno-amx-*): still
 * everything else this CPU has (AVX-512, VNNI).
 */
export function ensureLlamaBench(model: string, cacheDir = DEFAULT_MODEL_DIR): string {
  installLlamaPeer();
  const commit = sh('git', ['bundle', 'list-heads', BUNDLE]).trim().split(/\s+/)[0]!.slice(0, 8);
  const noAmxDir = join(cacheDir, `llama-bench-${commit}-noamx`);
  const marker = join(cacheDir, `llama-bench-${commit}`, 'amx-faults');
  if (!existsSync(marker)) {
    const native = build(join(cacheDir, `llama-bench-${commit}`), null);
    const smoke = smokeTest(native, model);
    if (smoke.ok) return native;
    process.stderr.write(`the native llama-bench died (${smoke.why}) on ${model}; building it again without AMX\n`);
    writeFileSync(marker, `${smoke.why}\n`);
  }
  const binary = build(noAmxDir, NO_AMX);
  const smoke = smokeTest(binary, model);
  if (!smoke.ok) throw new Error(`llama-bench (${binary}) died on ${model}: ${smoke.why}`);
  return binary;
}

/** llama-bench built for AVX2/FMA/F16C only (no AVX-512, no AMX), built first if missing. */
export function ensureLlamaBenchAvx2(model: string, cacheDir = DEFAULT_MODEL_DIR): string {
  installLlamaPeer();
  const commit = sh('git', ['bundle', 'list-heads', BUNDLE]).trim().split(/\s+/)[0]!.slice(0, 8);
  const binary = build(join(cacheDir, `llama-bench-${commit}-avx2`), null, AVX2_ONLY);
  const smoke = smokeTest(binary, model);
  if (!smoke.ok) throw new Error(`llama-bench (${binary}) died on ${model}: ${smoke.why}`);
  return binary;
}

interface LlamaBenchRow {
  n_prompt: number;
  n_gen: number;
  n_depth?: number;
  avg_ns: number;
  cpu_info?: string;
}

/** Peak VmRSS of a running child, sampled every 10 ms until it exits. */
function sampleRss(child: ChildProcess): () => number {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kb * 1024);
    } catch { /* exited */ }
  }, 10);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

/**
 * llama-bench as an e2e engine: one run is two invocations with one repetition each (after
 * llama-bench's own warm-up): `-p 512 -n 128 -d 0` (prefill and decode at depth 0), then
 * `-p 0 -n 128 -d 512` (decode after a 512-token context). The prompt's token values are
 * llama-bench's own; speed does not depend on them. Peak RSS is sampled over the whole second
 * invocation (loading included).
 */
export class LlamaBenchEngine {
  private child: ChildProcess | null = null;

  constructor(readonly name: 'llama-bench' | 'llama-bench-avx2', private readonly binary: string, private readonly options: EngineOptions) {}

  private invoke(args: string[]): Promise<{ rows: LlamaBenchRow[]; peakRssBytes: number }> {
    const o = this.options;
    const all = ['-m', o.model, '-t', String(o.threads), '-b', String(o.batch), '-ub', String(o.batch), '-ctk', o.kvCacheType, '-ctv', o.kvCacheType,
      '-fa', o.flashAttention, '-r', '1', '-o', 'json', ...args];
    return new Promise((resolve, reject) => {
      const child = spawn(this.binary, all, { stdio: ['ignore', 'pipe', 'pipe'] });
      this.child = child;
      const peak = sampleRss(child);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
      child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        const peakRssBytes = peak();
        this.child = null;
        if (code !== 0) return reject(new Error(`llama-bench ${all.join(' ')} failed (${signal ?? code}):\n${err.slice(-2000)}`));
        try {
          resolve({ rows: JSON.parse(out) as LlamaBenchRow[], peakRssBytes });
        } catch (e) {
          reject(new Error(`llama-bench printed no JSON: ${(e as Error).message}\n${out.slice(0, 500)}`));
        }
      });
    });
  }

  async run(req: RunRequest): Promise<RunResult> {
    const depth = req.prompt.length;
    const first = await this.invoke(['-p', String(depth), '-n', String(req.generate), '-d', '0']);
    const second = await this.invoke(['-p', '0', '-n', String(req.generate), '-d', String(depth)]);
    const find = (rows: LlamaBenchRow[], p: number, n: number) => {
      const row = rows.find((r) => r.n_prompt === p && r.n_gen === n);
      if (!row) throw new Error(`llama-bench gave no pp${p}/tg${n} row`);
      return row.avg_ns / 1e6;
    };
    return {
      prefill: { tokens: depth, ms: find(first.rows, depth, 0) },
      decodeShallow: { tokens: req.generate, ms: find(first.rows, 0, req.generate), peakRssBytes: first.peakRssBytes },
      decodeDeep: { tokens: req.generate, ms: find(second.rows, 0, req.generate), peakRssBytes: second.peakRssBytes },
    };
  }

  stop(): void {
    this.child?.kill();
  }
}

export async function run(args: string[]): Promise<void> {
  const model = argValue(args, '--model') ?? ensureBenchModel(SHAPES.qwen2!, 'q8_0');
  const ensure = args.includes('--avx2') ? ensureLlamaBenchAvx2 : ensureLlamaBench;
  console.log(ensure(model, argValue(args, '--models-dir') ?? DEFAULT_MODEL_DIR));
}
