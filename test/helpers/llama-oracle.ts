// llama.cpp as a test oracle: next-token log-probabilities and greedy continuations from
// node-llama-cpp 3.21.1's prebuilt CPU binary, installed on demand into .cache/llama-oracle/ by
// scripts/install-llama-oracle.mjs. Nothing is ever compiled or downloaded besides that npm install.
//
// Settings match the shared references in ../shared/models/reference/: ggml's AVX2 CPU kernels
// (the install script keeps only those; see why there), F32 KV cache, flash attention off, greedy
// sampling (which leaves the whole vocabulary in the candidates, so the probabilities are a softmax
// over every token).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const INSTALL_SCRIPT = join(REPO_ROOT, 'scripts', 'install-llama-oracle.mjs');
const PACKAGE_ENTRY = join(REPO_ROOT, '.cache', 'llama-oracle', 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const INSTALL_TIMEOUT_MS = 5 * 60_000;
// What ggml's `haswell` CPU library, the only one the install keeps, needs from the CPU.
const REQUIRED_CPU_FLAGS = ['sse4_2', 'avx', 'f16c', 'avx2', 'bmi2', 'fma'];
// One thread: llama.cpp splits matrix rows, not dot products, across threads, so the count does
// not change the numbers, and on a busy two-core machine a second thread makes every step wait for
// a descheduled partner (stories260K: 12 ms a token with two threads, 0.4 ms with one).
const THREADS = 1;

// The slice of node-llama-cpp's API used here; its own types live in .cache/, outside the build.
type EvaluateItem = number | [number, { generateNext: { probabilities?: boolean; token?: boolean } }];
interface EvaluateOutput {
  next: { token?: number | null; probabilities?: Map<number, number> };
}
interface LlamaContextSequence {
  controlledEvaluate(input: EvaluateItem[]): Promise<Array<EvaluateOutput | undefined>>;
}
interface LlamaContext {
  getSequence(): LlamaContextSequence;
  dispose(): Promise<void>;
}
interface LlamaModel {
  createContext(options: {
    contextSize: number;
    batchSize: number;
    sequences: number;
    threads: { ideal: number; min: number };
    flashAttention: boolean;
    experimentalKvCacheKeyType: 'F32';
    experimentalKvCacheValueType: 'F32';
  }): Promise<LlamaContext>;
  dispose(): Promise<void>;
}
interface Llama {
  loadModel(options: { modelPath: string; gpuLayers: number; useMmap: boolean; defaultContextFlashAttention: boolean }): Promise<LlamaModel>;
}
interface NodeLlamaCpp {
  getLlama(options: {
    gpu: false;
    build: 'never';
    usePrebuiltBinaries: true;
    skipDownload: true;
    maxThreads: number;
    logLevel: 'error';
    progressLogs: false;
  }): Promise<Llama>;
}

export interface TopLogprobs {
  /** Position of the input token; `top` predicts the token at `pos + 1`. */
  pos: number;
  /** The k most likely next tokens, most likely first; logprob = log(softmax(logits)[id]). */
  top: Array<{ id: number; logprob: number }>;
}

let loading: Promise<Llama | string> | undefined;

function missingCpuFlags(): string[] {
  let cpuinfo: string;
  try {
    cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return REQUIRED_CPU_FLAGS;
  }
  const flags = new Set(/^flags\s*:(.*)$/m.exec(cpuinfo)?.[1]?.trim().split(/\s+/));
  return REQUIRED_CPU_FLAGS.filter((f) => !flags.has(f));
}

/** The loaded llama.cpp binding, or the reason it cannot be had. Installs on the first call. */
function loadLlama(): Promise<Llama | string> {
  loading ??= (async () => {
    const missing = missingCpuFlags();
    if (missing.length > 0) return `llama.cpp's AVX2 kernels need CPU features this machine lacks: ${missing.join(', ')}`;
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [INSTALL_SCRIPT], { timeout: INSTALL_TIMEOUT_MS });
      if (stdout.trim()) console.log(stdout.trim());
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      return `installing node-llama-cpp failed: ${(e.stderr || e.message).trim()}`;
    }
    if (!existsSync(PACKAGE_ENTRY)) return `node-llama-cpp is not at ${PACKAGE_ENTRY} after the install`;
    // Read by node-llama-cpp when its modules load: never fetch llama.cpp sources or binaries.
    process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = 'true';
    try {
      const mod = (await import(pathToFileURL(PACKAGE_ENTRY).href)) as NodeLlamaCpp;
      return await mod.getLlama({
        gpu: false,
        build: 'never',
        usePrebuiltBinaries: true,
        skipDownload: true,
        maxThreads: THREADS,
        logLevel: 'error',
        progressLogs: false,
      });
    } catch (err) {
      return `loading node-llama-cpp's prebuilt CPU binary failed: ${(err as Error).message}`;
    }
  })();
  return loading;
}

async function requireLlama(): Promise<Llama> {
  const llama = await loadLlama();
  if (typeof llama === 'string') throw new Error(`llama.cpp oracle unavailable: ${llama}`);
  return llama;
}

/** Whether the oracle can run here; installs it on first use and prints why when it cannot. */
export async function llamaOracleAvailable(): Promise<boolean> {
  const llama = await loadLlama();
  if (typeof llama === 'string') {
    console.warn(`llama.cpp oracle unavailable: ${llama}`);
    return false;
  }
  return true;
}

/** Runs `fn` on a fresh single-sequence context of `contextSize` tokens, then frees everything. */
async function withSequence<T>(
  modelPath: string,
  contextSize: number,
  batchSize: number,
  fn: (seq: LlamaContextSequence) => Promise<T>,
): Promise<T> {
  const llama = await requireLlama();
  const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: true, defaultContextFlashAttention: false });
  try {
    const context = await model.createContext({
      contextSize,
      batchSize,
      sequences: 1,
      threads: { ideal: THREADS, min: THREADS },
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    try {
      return await fn(context.getSequence());
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

/**
 * Teacher forcing: evaluates `tokens` in one batch and returns, at every position, the k most
 * likely next tokens with their log-probabilities.
 */
export async function llamaTopLogprobs(modelPath: string, tokens: number[], k = 10): Promise<TopLogprobs[]> {
  if (tokens.length === 0) throw new Error('llamaTopLogprobs needs at least one token');
  return withSequence(modelPath, tokens.length, tokens.length, async (seq) => {
    const outputs = await seq.controlledEvaluate(tokens.map((id) => [id, { generateNext: { probabilities: true } }]));
    return tokens.map((_, pos) => {
      const probabilities = outputs[pos]?.next.probabilities;
      if (!probabilities) throw new Error(`node-llama-cpp returned no probabilities at position ${pos}`);
      const top: TopLogprobs['top'] = [];
      // The map is sorted by probability, highest first.
      for (const [id, p] of probabilities) {
        if (top.length === k) break;
        top.push({ id, logprob: Math.log(p) });
      }
      return { pos, top };
    });
  });
}

/** Greedy (argmax) continuation of `n` tokens after `promptTokens`. */
export async function llamaGreedy(modelPath: string, promptTokens: number[], n: number): Promise<number[]> {
  if (promptTokens.length === 0) throw new Error('llamaGreedy needs at least one prompt token');
  if (n <= 0) return [];
  return withSequence(modelPath, promptTokens.length + n, promptTokens.length, async (seq) => {
    const next = async (input: EvaluateItem[]): Promise<number> => {
      const token = (await seq.controlledEvaluate(input)).at(-1)?.next.token;
      if (token == null) throw new Error('node-llama-cpp generated no token');
      return token;
    };
    const last = promptTokens.length - 1;
    const generated = [await next([...promptTokens.slice(0, last), [promptTokens[last]!, { generateNext: { token: true } }]])];
    while (generated.length < n) generated.push(await next([[generated.at(-1)!, { generateNext: { token: true } }]]));
    return generated;
  });
}
