// One engine of the end-to-end bench in its own process, so its memory is its own: kiln, or
// llama.cpp through node-llama-cpp. bench/e2e.ts starts it and talks JSON lines over stdio:
// it answers {ready} once the model is loaded (with the ggml CPU library node-llama-cpp chose),
// then one result line per {cmd: 'run'} request.
//
// A run, with the prompt and token ids from the request:
//   prefill: the 512-token prompt at position 0, in one batch, until its last logits;
//   decode at depth 512: 128 tokens after that prompt, one forward step each;
//   decode at depth 0: 128 tokens after a one-token prompt.
// Each decoded token is the greedy pick, or with `sampling` a seeded draw at its temperature, top-k
// and top-p, as a request asks for (node-llama-cpp's own defaults, top-k 40 and top-p 0.95, are set
// to the same values); the prefill's token stays greedy in both engines. kiln excludes the
// end-of-generation tokens from sampling, so every run decodes all its tokens; node-llama-cpp's
// end token is replaced by another before it is fed.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface EngineOptions {
  engine: 'kiln' | 'llama.cpp';
  /** kiln only: Runtime.load's backend. */
  backend?: 'cpu' | 'webgpu' | 'cuda' | 'auto';
  /** kiln only: the CPU kernel tier ('avx2' leaves the AVX-512 kernels out); 'best' by default. */
  level?: 'best' | 'avx2';
  model: string;
  threads: number;
  contextSize: number;
  batch: number;
  kvCacheType: 'f16' | 'f32';
  /** llama.cpp only: node-llama-cpp's flash attention setting. */
  flashAttention: 'auto' | 'on' | 'off';
  /** How decoded tokens are picked: greedy at temperature 0 (the default). llama-bench never samples. */
  sampling?: Sampling;
}

/** A request's sampling settings, the same for kiln and node-llama-cpp: top-k 0 and top-p 1 are off. */
export interface Sampling {
  temperature: number;
  topK: number;
  topP: number;
}

const SAMPLING_SEED = 1234;

export interface RunRequest {
  cmd: 'run';
  prompt: number[];
  /** The one-token prompt of the depth-0 decode. */
  start: number;
  generate: number;
}

export interface Timed {
  tokens: number;
  ms: number;
}

export interface RunResult {
  prefill: Timed;
  decodeDeep: Timed & { peakRssBytes: number };
  decodeShallow: Timed & { peakRssBytes: number };
}

interface Engine {
  /** What ran, for the report: node-llama-cpp's CPU variant. */
  variant?: string;
  /** Evaluates `prompt` from position 0 (forgetting the cache); returns the next token (greedy, or sampled as asked). */
  prefill(prompt: number[]): Promise<number>;
  /** Feeds `first`, then each next token, `n` forward steps in all. */
  decode(first: number, n: number): Promise<void>;
}

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/**
 * node-llama-cpp as a user installs it (scripts/install-llama-oracle.mjs --peer), every CPU
 * variant kept so it picks its own for this CPU; not the tests' oracle, which is pinned to AVX2.
 */
export const LLAMA_PACKAGE_ENTRY = join(REPO_ROOT, '.cache', 'node-llama-cpp-peer', 'node_modules', 'node-llama-cpp', 'dist', 'index.js');

/** The ggml CPU libraries mapped into this process: the variant ggml's loader chose. */
function loadedCpuVariants(): string[] {
  const maps = readFileSync('/proc/self/maps', 'utf8');
  return [...new Set([...maps.matchAll(/libggml-cpu-([\w.-]+?)\.so/g)].map((m) => m[1]!))];
}

/** Peak RSS from here on: resets the kernel's high-water mark (Linux), else samples VmRSS. */
function rssPeakTracker(): () => number {
  const status = () => readFileSync('/proc/self/status', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status())?.[1] ?? NaN) * 1024;
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return () => field('VmHWM');
  } catch {
    let peak = process.memoryUsage.rss();
    const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 5);
    return () => {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage.rss());
    };
  }
}

/**
 * kiln's runtime as the benches run it: the kernel tier set first, and a logit bias that keeps the
 * end-of-generation tokens from being picked, so every run decodes all its tokens.
 */
export async function loadKiln(o: Pick<EngineOptions, 'model' | 'backend' | 'level' | 'threads' | 'contextSize' | 'batch' | 'kvCacheType'>) {
  const { Runtime } = await import('../src/index.js');
  const { native } = await import('../src/native/binding.js');
  // Process-wide and read when the plan is built (Q4_0 packing), so set before loading.
  native().setKernelLevel(o.level ?? 'best');
  const rt = await Runtime.load({ model: o.model, backend: o.backend ?? 'cpu', threads: o.threads, contextSize: o.contextSize, maxBatch: o.batch, kvCacheType: o.kvCacheType });
  const logitBias: Record<number, number> = {};
  for (let id = 0; id < rt.info.hparams.vocabSize; id++) if (rt.tokenizer.isEog(id)) logitBias[id] = -Infinity;
  return { rt, logitBias };
}

async function kilnEngine(o: EngineOptions): Promise<Engine> {
  const { rt, logitBias } = await loadKiln(o);
  // generate() runs the prompt, then one forward step per token after the first; a
  // continuation of the previous prompt reuses its cache, which is what decode wants.
  let history: number[] = [];
  const sampling = { temperature: o.sampling?.temperature ?? 0, topK: o.sampling?.topK ?? 0, topP: o.sampling?.topP ?? 1, seed: SAMPLING_SEED };
  return {
    async prefill(prompt) {
      const r = await rt.complete({ prompt, maxTokens: 1, temperature: 0, logitBias });
      if (r.usage.cachedTokens !== 0) throw new Error(`the prompt reused ${r.usage.cachedTokens} cached tokens`);
      history = [...prompt];
      return r.tokens[0]!;
    },
    async decode(first, n) {
      history.push(first);
      const r = await rt.complete({ prompt: history, maxTokens: n, ...sampling, logitBias });
      if (r.timings.prefillTokens !== 1) throw new Error(`decode re-evaluated ${r.timings.prefillTokens} tokens`);
      history.push(...r.tokens);
    },
  };
}

// The slice of node-llama-cpp's API used here; its own types live in .cache/, outside the build.
type EvaluateItem = number | [number, { generateNext: { token: boolean; options?: object } }];
interface LlamaSequence {
  controlledEvaluate(input: EvaluateItem[]): Promise<Array<{ next: { token?: number | null } } | undefined>>;
  clearHistory(): Promise<void>;
}
interface NodeLlamaCpp {
  getLlama(o: object): Promise<{
    loadModel(o: object): Promise<{
      createContext(o: object): Promise<{ getSequence(o?: object): LlamaSequence }>;
      tokens: { eos: number | null; eot: number | null };
    }>;
  }>;
}

async function llamaEngine(o: EngineOptions): Promise<Engine> {
  process.env.NODE_LLAMA_CPP_SKIP_DOWNLOAD = 'true';
  const mod = (await import(pathToFileURL(LLAMA_PACKAGE_ENTRY).href)) as NodeLlamaCpp;
  const llama = await mod.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true, maxThreads: o.threads, logLevel: 'error', progressLogs: false });
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const kv = o.kvCacheType === 'f16' ? 'F16' : 'F32';
  const context = await model.createContext({
    contextSize: o.contextSize,
    batchSize: o.batch,
    sequences: 1,
    threads: { ideal: o.threads, min: o.threads },
    flashAttention: o.flashAttention === 'auto' ? 'auto' : o.flashAttention === 'on',
    experimentalKvCacheKeyType: kv,
    experimentalKvCacheValueType: kv,
  });
  const eog = [model.tokens.eos, model.tokens.eot].filter((t): t is number => t !== null);
  const seq = context.getSequence();
  const variants = loadedCpuVariants();
  const t = o.sampling?.temperature ?? 0;
  // node-llama-cpp's own defaults at a temperature above 0 are top-k 40 and top-p 0.95: set as asked.
  const generateNext = t > 0
    ? { token: true, options: { temperature: t, topK: o.sampling!.topK, topP: o.sampling!.topP, minP: 0, seed: SAMPLING_SEED } }
    : { token: true };
  const next = async (input: EvaluateItem[]) => {
    const token = (await seq.controlledEvaluate(input)).at(-1)?.next.token;
    if (token == null) throw new Error('node-llama-cpp returned no token');
    // The pick may be an end token; feeding a token id other than it keeps the step the same.
    return eog.includes(token) ? 300 : token;
  };
  return {
    variant: variants.length > 0 ? variants.join('+') : 'unknown (no libggml-cpu-*.so mapped)',
    async prefill(prompt) {
      await seq.clearHistory();
      // Greedy, as kiln's prefill: the sampling settings are for the decoded tokens.
      return next([...prompt.slice(0, -1), [prompt.at(-1)!, { generateNext: { token: true } }]]);
    },
    async decode(first, n) {
      let token = first;
      for (let i = 0; i < n; i++) token = await next([[token, { generateNext }]]);
    },
  };
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t0 };
}

async function runOnce(engine: Engine, req: RunRequest): Promise<RunResult> {
  const prefill = await timed(() => engine.prefill(req.prompt));
  let peak = rssPeakTracker();
  const deep = await timed(() => engine.decode(prefill.value, req.generate));
  const deepPeak = peak();
  const start = await engine.prefill([req.start]);
  peak = rssPeakTracker();
  const shallow = await timed(() => engine.decode(start, req.generate));
  return {
    prefill: { tokens: req.prompt.length, ms: prefill.ms },
    decodeDeep: { tokens: req.generate, ms: deep.ms, peakRssBytes: deepPeak },
    decodeShallow: { tokens: req.generate, ms: shallow.ms, peakRssBytes: peak() },
  };
}

async function serve(options: EngineOptions): Promise<void> {
  const send = (msg: object) => process.stdout.write(JSON.stringify(msg) + '\n');
  let engine: Engine;
  try {
    const load = await timed(() => (options.engine === 'kiln' ? kilnEngine(options) : llamaEngine(options)));
    engine = load.value;
    send({ ready: true, loadMs: load.ms, variant: engine.variant });
  } catch (err) {
    send({ ready: false, error: (err as Error).message });
    return;
  }
  // The bench closing stdin (or dying) ends this process, even in the middle of a run.
  process.stdin.on('end', () => process.exit(0));
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    try {
      send({ ok: true, result: await runOnce(engine, JSON.parse(line) as RunRequest) });
    } catch (err) {
      send({ ok: false, error: (err as Error).stack ?? String(err) });
    }
  }
  process.exit(0);
}

export async function run(): Promise<void> {
  process.stderr.write('e2e-engine is started by `kiln bench e2e`; it is not a bench of its own\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  serve(JSON.parse(process.argv[2]!) as EngineOptions);
}
