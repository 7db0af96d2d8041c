// Installs llama.cpp, as the npm package node-llama-cpp and its prebuilt CPU binary, into
// .cache/llama-oracle/ for tests and benchmarks to compare against. Never a dependency of kiln.
//
// node-llama-cpp lists every GPU build (CUDA, Vulkan: hundreds of MB) as an optional dependency, so
// the CPU package is a direct dependency here and optional ones are omitted. Its postinstall would
// download or compile llama.cpp when no prebuilt binary fits, so scripts never run, and
// NODE_LLAMA_CPP_SKIP_DOWNLOAD stays set for anything that reads it.
//
// The x64 package holds one ggml CPU library per instruction-set level, and ggml loads the best one
// the CPU supports. Their numbers differ: against the references in ../shared/models/reference/
// (made with the AVX2 `haswell` library, which matches them to 5e-6), the AVX-512 `zen4` library is
// 2e-3 off on F16 weights, the AMX `sapphirerapids` one 0.03 off on Q8_0, the AVX `piledriver` one
// 0.04 off on Q4_0. An oracle has to give the same answer on every machine, so only `haswell`
// (AVX2, FMA, F16C: the level kiln's CPU kernels target) is kept; a CPU without it gets no oracle.
//
// Usage: node scripts/install-llama-oracle.mjs    (idempotent; exit code 1 with a reason on failure)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_LLAMA_CPP_VERSION = '3.21.1';
export const ORACLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache', 'llama-oracle');
const PACKAGES = ['node-llama-cpp', '@node-llama-cpp/linux-x64'];
const BINS_DIR = join(ORACLE_DIR, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
export const PINNED_CPU_LIBRARY = 'libggml-cpu-haswell.so';

// A second process (another test file, a bench) may be installing at the same moment.
const LOCK_DIR = join(ORACLE_DIR, '.install-lock');
const LOCK_STALE_MS = 10 * 60_000;
const LOCK_WAIT_MS = 10 * 60_000;

function installedVersion(pkg) {
  const file = join(ORACLE_DIR, 'node_modules', pkg, 'package.json');
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')).version ?? null;
  } catch {
    return null;
  }
}

function isInstalled() {
  return PACKAGES.every((pkg) => installedVersion(pkg) === NODE_LLAMA_CPP_VERSION);
}

function unpinnedCpuLibraries() {
  return readdirSync(BINS_DIR).filter((f) => /^libggml-cpu-.+\.so$/.test(f) && f !== PINNED_CPU_LIBRARY);
}

function isPinned() {
  return existsSync(join(BINS_DIR, PINNED_CPU_LIBRARY)) && unpinnedCpuLibraries().length === 0;
}

/** Deletes every ggml CPU library but the pinned one; returns what it deleted. */
function pinCpuLibrary() {
  if (!existsSync(join(BINS_DIR, PINNED_CPU_LIBRARY))) throw new Error(`${PINNED_CPU_LIBRARY} is missing from ${BINS_DIR}`);
  const removed = unpinnedCpuLibraries();
  for (const f of removed) rmSync(join(BINS_DIR, f));
  return removed;
}

// npm's errors run to a stack trace and advice; the reason is in the first lines.
function firstLines(text, n) {
  return text.trim().split('\n').slice(0, n).join('\n');
}

async function withLock(fn) {
  mkdirSync(ORACLE_DIR, { recursive: true });
  const start = Date.now();
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let age = 0;
      try {
        age = Date.now() - statSync(LOCK_DIR).mtimeMs;
      } catch {
        continue; // released between the two calls
      }
      if (age > LOCK_STALE_MS) {
        rmSync(LOCK_DIR, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - start > LOCK_WAIT_MS) throw new Error(`another install holds ${LOCK_DIR}; remove it if no install is running`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    return fn();
  } finally {
    rmSync(LOCK_DIR, { recursive: true, force: true });
  }
}

/** Installs when needed. Returns a description of what it did; throws with the reason. */
export async function installLlamaOracle() {
  if (`${process.platform}-${process.arch}` !== 'linux-x64') {
    throw new Error(`the oracle is pinned to llama.cpp's AVX2 kernels from @node-llama-cpp/linux-x64; this is ${process.platform}-${process.arch}`);
  }
  const what = PACKAGES.map((p) => `${p}@${NODE_LLAMA_CPP_VERSION}`).join(', ');
  if (isInstalled() && isPinned()) return `already installed: ${what} in ${ORACLE_DIR}`;

  return withLock(() => {
    const done = [];
    if (!isInstalled()) {
      const manifest = {
        name: 'kiln-llama-oracle',
        private: true,
        description: 'llama.cpp as a test and bench oracle for kiln; written by scripts/install-llama-oracle.mjs',
        dependencies: Object.fromEntries(PACKAGES.map((p) => [p, NODE_LLAMA_CPP_VERSION])),
      };
      writeFileSync(join(ORACLE_DIR, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
      const args = ['install', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund', '--fetch-retries=1', '--fetch-retry-mintimeout=2000', '--loglevel=error'];
      const started = Date.now();
      const run = spawnSync('npm', args, { cwd: ORACLE_DIR, env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' }, encoding: 'utf8' });
      if (run.error) throw new Error(`could not run npm: ${run.error.message}`);
      if (run.status !== 0) throw new Error(`npm ${args.join(' ')} failed in ${ORACLE_DIR} (exit ${run.status}):\n${firstLines(run.stderr || run.stdout, 4)}`);
      if (!isInstalled()) throw new Error(`npm finished but ${PACKAGES.join(' and ')} @${NODE_LLAMA_CPP_VERSION} are not in ${ORACLE_DIR}/node_modules`);
      done.push(`installed ${what} in ${ORACLE_DIR} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
    const removed = pinCpuLibrary();
    if (removed.length > 0) done.push(`kept ${PINNED_CPU_LIBRARY}, deleted the other ggml CPU libraries (${removed.join(', ')})`);
    return done.length > 0 ? done.join('; ') : `installed by another process: ${what} in ${ORACLE_DIR}`;
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    console.log(`llama-oracle: ${await installLlamaOracle()}`);
  } catch (err) {
    console.error(`llama-oracle: ${err.message}`);
    process.exit(1);
  }
}
