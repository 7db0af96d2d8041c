// What the benches report about the machine they ran on: CPU model and features, core count, load,
// and the measured limits (read bandwidth, peak FMA rate) that kernel speeds are compared with.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { native, nativeAddonPath } from '../src/native/binding.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// What the addon is built from: a file here newer than the addon means it was not rebuilt since.
const NATIVE_SOURCES = ['native', 'CMakeLists.txt', 'binding.gyp'];

/** Which build of the addon a bench ran, so that a stale or scratch build shows in its output. */
export interface AddonInfo {
  /** Relative to the repository when inside it. */
  path: string;
  /** The first 12 hex digits of the file's SHA-256. */
  sha256: string;
  builtAt: string;
  /** The repository's HEAD commit, when git can say. */
  commit?: string;
  /** Reasons the addon may not be the committed sources' build (empty when none is seen). */
  warnings: string[];
}

function newestSource(path: string): { file: string; mtimeMs: number } | undefined {
  let st;
  try {
    st = statSync(path);
  } catch {
    return undefined;
  }
  if (!st.isDirectory()) return { file: path, mtimeMs: st.mtimeMs };
  let newest: { file: string; mtimeMs: number } | undefined;
  for (const name of readdirSync(path)) {
    const n = newestSource(join(path, name));
    if (n && (!newest || n.mtimeMs > newest.mtimeMs)) newest = n;
  }
  return newest;
}

export function addonInfo(): AddonInfo {
  const path = nativeAddonPath();
  const st = statSync(path);
  const rel = relative(REPO_ROOT, path);
  const info: AddonInfo = {
    path: rel.startsWith('..') ? path : rel,
    sha256: createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 12),
    builtAt: st.mtime.toISOString(),
    warnings: [],
  };
  if (info.path !== join('build', 'Release', 'kiln.node')) info.warnings.push('not the default build (KILN_ADDON)');
  for (const source of NATIVE_SOURCES) {
    const n = newestSource(join(REPO_ROOT, source));
    if (n && n.mtimeMs > st.mtimeMs) {
      info.warnings.push(`${relative(REPO_ROOT, n.file)} changed after it was built (npm run build:native)`);
      break;
    }
  }
  const git = (...args: string[]) => spawnSync('git', ['-C', REPO_ROOT, ...args], { encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status === 0) {
    info.commit = head.stdout.trim();
    const dirty = git('status', '--porcelain', '--', ...NATIVE_SOURCES);
    if (dirty.status === 0 && dirty.stdout.trim()) info.warnings.push('native sources differ from HEAD');
  }
  return info;
}

/** Writes the addon's warnings to stderr, before a long run starts on a stale or scratch build. */
export function warnAboutAddon(m: MachineInfo): void {
  if (m.addon.warnings.length) process.stderr.write(`WARNING: kiln addon ${m.addon.path}: ${m.addon.warnings.join('; ')}\n`);
}

export interface MachineInfo {
  cpu: string;
  logicalCores: number;
  physicalCores: number;
  features: string[];
  memoryGiB: number;
  /** 1-minute load average when the bench started: other work on the machine. */
  load: number;
  node: string;
  addon: AddonInfo;
}

export interface MachineLimits {
  threads: number;
  /** Best read bandwidth over a 1 GiB buffer, GB/s. */
  readGBs: number;
  /** Best FP32 FMA rate, GFLOP/s. */
  fmaGFlops: number;
}

export function machineInfo(): MachineInfo {
  const f = native().cpuFeatures();
  let cpu = cpus()[0]?.model ?? 'unknown CPU';
  try {
    cpu = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    // not Linux: os.cpus() has it
  }
  const features = (['avx2', 'fma', 'f16c', 'avx512f', 'avxVnni', 'neon'] as const).filter((k) => f[k]);
  return {
    cpu,
    logicalCores: f.logicalCores,
    physicalCores: f.physicalCores,
    features,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    load: loadavg()[0]!,
    node: process.version,
    addon: addonInfo(),
  };
}

/** Measures read bandwidth and FMA peak with `threads` threads (about 2 * seconds in all). */
export async function measureLimits(threads: number, seconds = 2): Promise<MachineLimits> {
  const addon = native();
  const readGBs = await addon.probeMemoryBandwidth(threads, 2 ** 30, seconds);
  const fmaGFlops = await addon.probeFmaPeak(threads, seconds);
  return { threads, readGBs, fmaGFlops };
}

/**
 * Read bandwidth right now, from a short probe (a few passes over 1 GiB): the bandwidth of a
 * machine whose memory is shared with other guests swings by half from minute to minute, so a run
 * is compared with the bandwidth measured around it as well as with the session's best.
 */
export function probeReadNow(threads: number): Promise<number> {
  return native().probeMemoryBandwidth(threads, 2 ** 30, 0.2);
}

export function describeMachine(m: MachineInfo, limits?: MachineLimits): string {
  const lines = [
    `${m.cpu}: ${m.physicalCores} cores (${m.logicalCores} logical), ${m.features.join('/')}, ${m.memoryGiB} GiB, Node ${m.node}, load ${m.load.toFixed(2)}`,
    `kiln addon ${m.addon.path} (sha256 ${m.addon.sha256}, built ${m.addon.builtAt})${m.addon.commit ? ` at ${m.addon.commit}` : ''}` +
      (m.addon.warnings.length ? `; WARNING: ${m.addon.warnings.join('; ')}` : ''),
  ];
  if (limits) {
    lines.push(`measured with ${limits.threads} threads: read ${limits.readGBs.toFixed(1)} GB/s, FP32 FMA ${limits.fmaGFlops.toFixed(0)} GFLOP/s`);
  }
  return lines.join('\n');
}

/** n seeded pseudo-random floats in (-range, range): the same values on every machine and run. */
export function randomFloats(n: number, seed: number, range = 1): Float32Array {
  const out = new Float32Array(n);
  let s = seed | 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) | 0;
    out[i] = ((s >>> 8) / 8388608 - 1) * range;
  }
  return out;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Plain-text table with right-aligned numeric columns. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => /^[-+]?[\d.]/.test(r[i] ?? '') || (r[i] ?? '') === '-'));
  const line = (cells: string[]) =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
