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
// The speed peer of `bench e2e --vs llama.cpp` is a second install of the same packages,
// .cache/node-llama-cpp-peer/, with every CPU library kept: node-llama-cpp as a user installs it,
// choosing its variant for the CPU at hand (installNodeLlamaCppPeer).
//
// Usage: node scripts/install-llama-oracle.mjs [--peer]   (idempotent; exit code 1 with a reason on failure)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NODE_LLAMA_CPP_VERSION = '3.21.1';
const CACHE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache');
export const ORACLE_DIR = join(CACHE_DIR, 'llama-oracle');
export const PEER_DIR = join(CACHE_DIR, 'node-llama-cpp-peer');
const PACKAGES = ['node-llama-cpp', '@node-llama-cpp/linux-x64'];
const binsDir = (dir) => join(dir, 'node_modules', '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
export const PINNED_CPU_LIBRARY = 'libggml-cpu-haswell.so';

// A second process (another test file, a bench) may be installing at the same moment.
const LOCK_STALE_MS = 10 * 60_000;
const LOCK_WAIT_MS = 10 * 60_000;

function installedVersion(dir, pkg) {
  const file = join(dir, 'node_modules', pkg, 'package.json');
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')).version ?? null;
  } catch {
    return null;
  }
}

function isInstalled(dir) {
  return PACKAGES.every((pkg) => installedVersion(dir, pkg) === NODE_LLAMA_CPP_VERSION);
}

function unpinnedCpuLibraries() {
  return readdirSync(binsDir(ORACLE_DIR)).filter((f) => /^libggml-cpu-.+\.so$/.test(f) && f !== PINNED_CPU_LIBRARY);
}

function isPinned() {
  return existsSync(join(binsDir(ORACLE_DIR), PINNED_CPU_LIBRARY)) && unpinnedCpuLibraries().length === 0;
}

/** Deletes every ggml CPU library of the oracle but the pinned one; returns what it deleted. */
function pinCpuLibrary() {
  const bins = binsDir(ORACLE_DIR);
  if (!existsSync(join(bins, PINNED_CPU_LIBRARY))) throw new Error(`${PINNED_CPU_LIBRARY} is missing from ${bins}`);
  const removed = unpinnedCpuLibraries();
  for (const f of removed) rmSync(join(bins, f));
  return removed;
}

// npm's errors run to a stack trace and advice; the reason is in the first lines.
function firstLines(text, n) {
  return text.trim().split('\n').slice(0, n).join('\n');
}

async function withLock(dir, fn) {
  mkdirSync(dir, { recursive: true });
  const LOCK_DIR = join(dir, '.install-lock');
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

/** npm-installs the packages into `dir` unless they are there; returns what it did, or null. */
function npmInstall(dir, description) {
  if (isInstalled(dir)) return null;
  const what = PACKAGES.map((p) => `${p}@${NODE_LLAMA_CPP_VERSION}`).join(', ');
  const manifest = {
    name: `kiln-${description.replace(/\W+/g, '-')}`,
    private: true,
    description: `llama.cpp as a ${description} for kiln; written by scripts/install-llama-oracle.mjs`,
    dependencies: Object.fromEntries(PACKAGES.map((p) => [p, NODE_LLAMA_CPP_VERSION])),
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  const args = ['install', '--prefer-offline', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund', '--fetch-retries=1', '--fetch-retry-mintimeout=2000', '--loglevel=error'];
  const started = Date.now();
  const run = spawnSync('npm', args, { cwd: dir, env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' }, encoding: 'utf8' });
  if (run.error) throw new Error(`could not run npm: ${run.error.message}`);
  if (run.status !== 0) throw new Error(`npm ${args.join(' ')} failed in ${dir} (exit ${run.status}):\n${firstLines(run.stderr || run.stdout, 4)}`);
  if (!isInstalled(dir)) throw new Error(`npm finished but ${PACKAGES.join(' and ')} @${NODE_LLAMA_CPP_VERSION} are not in ${dir}/node_modules`);
  return `installed ${what} in ${dir} (${((Date.now() - started) / 1000).toFixed(1)} s)`;
}

function checkPlatform(what) {
  if (`${process.platform}-${process.arch}` !== 'linux-x64') {
    throw new Error(`${what} comes from @node-llama-cpp/linux-x64; this is ${process.platform}-${process.arch}`);
  }
}

/** Installs the oracle when needed. Returns a description of what it did; throws with the reason. */
export async function installLlamaOracle() {
  checkPlatform("the oracle, pinned to llama.cpp's AVX2 kernels,");
  const what = PACKAGES.map((p) => `${p}@${NODE_LLAMA_CPP_VERSION}`).join(', ');
  if (isInstalled(ORACLE_DIR) && isPinned()) return `already installed: ${what} in ${ORACLE_DIR}`;

  return withLock(ORACLE_DIR, () => {
    const done = [];
    const installed = npmInstall(ORACLE_DIR, 'test and bench oracle');
    if (installed) done.push(installed);
    const removed = pinCpuLibrary();
    if (removed.length > 0) done.push(`kept ${PINNED_CPU_LIBRARY}, deleted the other ggml CPU libraries (${removed.join(', ')})`);
    return done.length > 0 ? done.join('; ') : `installed by another process: ${what} in ${ORACLE_DIR}`;
  });
}

/** Installs the speed peer (every CPU variant kept) when needed; returns what it did. */
export async function installNodeLlamaCppPeer() {
  checkPlatform('the node-llama-cpp speed peer');
  const what = PACKAGES.map((p) => `${p}@${NODE_LLAMA_CPP_VERSION}`).join(', ');
  if (isInstalled(PEER_DIR)) return `already installed: ${what} in ${PEER_DIR}`;
  return withLock(PEER_DIR, () => npmInstall(PEER_DIR, 'speed peer') ?? `installed by another process: ${what} in ${PEER_DIR}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const peer = process.argv.includes('--peer');
    console.log(`${peer ? 'node-llama-cpp-peer' : 'llama-oracle'}: ${await (peer ? installNodeLlamaCppPeer() : installLlamaOracle())}`);
  } catch (err) {
    console.error(`llama-oracle: ${err.message}`);
    process.exit(1);
  }
}
