// The public entry point: load a GGUF model onto a backend, then complete prompts on it.
import { availableParallelism, totalmem } from 'node:os';
import type { Backend, BackendName, CompiledGraph } from '../backend/backend.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import { CudaBackend, cudaDevices } from '../backend/cuda/cuda-backend.js';
import { hardwareWebGpuAvailable, WebGpuBackend } from '../backend/webgpu/webgpu-backend.js';
import { InvalidArgumentError, KilnError } from '../errors.js';
import { checkPromptChars, ContextLengthExceededError } from '../generate/errors.js';
import { generate, type GenerateRequest, type GenerateResult, type PromptUsage, type TokenLogprob } from '../generate/generate.js';
import { openGguf } from '../gguf/open-gguf.js';
import type { GgufFile } from '../gguf/types.js';
import { buildDecoderGraph } from '../model/decoder-graph.js';
import { type HParams, readHParams } from '../model/hparams.js';
import { ModelWeights } from '../model/weights.js';
import { native } from '../native/binding.js';
import type { SamplingOptions } from '../sampling/sampling-options.js';
import { tokenizerFromGguf } from '../tokenizer/load-tokenizer.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import { Scheduler, type StepLogEntry } from './scheduler.js';
import { SlotPool } from './slot-pool.js';
import { AnswerGrammarConstraint } from '../chat/answer-grammar-constraint.js';
import { compileGrammar, type GrammarSpec } from '../grammar/compile-grammar.js';
import type { ChatMessage } from '../chat/messages.js';
import { ChatEngine, type ChatConfig, type ChatOptions, type ChatResult, type ChatStreamEvent, type ExplainCacheOptions } from './chat.js';
import type { CacheExplanation } from './explain-cache.js';

export interface LoadOptions {
  /** Path of a GGUF file. */
  model: string;
  backend?: BackendName | 'auto';
  /** CPU threads; default: physical cores. */
  threads?: number;
  /** Positions per sequence; default: the model's training context, at most 4096. */
  contextSize?: number;
  /**
   * Concurrent sequences, each with its own KV cache. Default 1; 'auto': up to AUTO_SLOTS, as many
   * as keep the KV cache within AUTO_KV_MEMORY_SHARE of the machine's memory.
   */
  slots?: number | 'auto';
  /**
   * Most tokens per forward step (the step's budget): every running sequence's decode token, then
   * prefill chunks of the others. Default 512; at least `slots`.
   */
  maxBatch?: number;
  /**
   * Requests that may wait for a slot; one more is refused at once with a QueueFullError (503,
   * Retry-After). Default: no limit.
   */
  maxQueue?: number;
  /** Test hook: called with every forward step's rows (see StepLogEntry). */
  onStep?: (entry: StepLogEntry) => void;
  kvCacheType?: 'f32' | 'f16';
  /** Called with the fraction of the load done, from 0 to 1. */
  onProgress?: (fraction: number) => void;
  /** Chat: a template (Jinja) overriding the model's `tokenizer.chat_template`. */
  chatTemplate?: ChatConfig['chatTemplate'];
  /** Chat: the tool-call format; default: chosen from the chat template. */
  toolCallFormat?: ChatConfig['toolCallFormat'];
  /** Chat: the exact-replay cache (`{ maxEntries, file }`), or false to turn replay off. */
  replay?: ChatConfig['replay'];
  /** Chat diagnostics: cache divergences at debug level, tool-call warnings. */
  logger?: ChatConfig['logger'];
}

export interface CompleteOptions extends SamplingOptions {
  /** Text (tokenized with BOS as the model says) or token ids. */
  prompt: string | number[];
  /** Default 256. */
  maxTokens?: number;
  stop?: string[];
  signal?: AbortSignal;
  /** Called once the prompt is evaluated, before the first token: its size and how much was cached. */
  onStart?: (start: PromptUsage) => void;
  /** Receives each piece of generated text as soon as it is final. */
  onToken?: (text: string) => void;
  /**
   * Report each generated token's log-probability and this many most likely alternatives (0 to
   * 20), from the model's raw distribution (before penalties, bias and temperature).
   */
  logprobs?: number;
  /** With `logprobs`: receives each generated token's entry, before its text. */
  onLogprob?: (entry: TokenLogprob) => void;
  /**
   * Constrains the completion to a grammar: `{ jsonSchema }`, `{ gbnf }` or `{ regex }`. Generation
   * ends when the grammar is complete (or at maxTokens).
   */
  grammar?: GrammarSpec;
}

/** What complete() returns: one request's generation result. */
export type CompleteResult = GenerateResult;

export interface RuntimeInfo {
  path: string;
  architecture: string;
  name: string | null;
  hparams: HParams;
  backend: BackendName;
  threads: number;
  contextSize: number;
  slots: number;
  /** Most tokens per forward step. */
  maxBatch: number;
  kvCacheType: 'f32' | 'f16';
}

/** More requests wait for a slot than the runtime's maxQueue allows. */
export class QueueFullError extends KilnError {
  readonly code = 'queue_full';
  override readonly status = 503;
  override readonly type = 'server_error';
  /** Seconds a client should wait before trying again (the Retry-After header). */
  readonly retryAfter = 1;
  constructor(limit: number) {
    super(`Every sequence slot is busy and ${limit} requests already wait for one. Retry shortly.`);
  }
}

export class RuntimeClosedError extends KilnError {
  readonly code = 'runtime_closed';
  constructor() {
    super('This runtime was closed; load the model again with Runtime.load().');
  }
}

const DEFAULT_MAX_CONTEXT = 4096;
/** Slots `slots: 'auto'` gives where memory allows: llama-server's default, enough for an agent's side requests beside its main turn. */
export const AUTO_SLOTS = 4;
/** The share of the machine's memory `slots: 'auto'` lets the KV cache take. */
export const AUTO_KV_MEMORY_SHARE = 0.25;

/** What the runtime is doing now, for gauges. */
export interface RuntimeLoad {
  /** Sequences holding a slot. */
  running: number;
  /** Requests waiting for a slot. */
  waiting: number;
  /** Tokens in the last forward step. */
  lastStepTokens: number;
  /** KV cache positions holding tokens, over all slots, and the positions there are. */
  kvUsed: number;
  kvCapacity: number;
}
const PREFAULT_CHUNK = 64 * 1024 * 1024;

export class Runtime {
  private closed = false;
  private running = 0;
  private chatEngine: ChatEngine | null = null;

  private constructor(
    readonly info: RuntimeInfo,
    readonly tokenizer: Tokenizer,
    readonly gguf: GgufFile,
    private readonly graph: CompiledGraph,
    private readonly slots: SlotPool,
    private readonly steps: Scheduler,
    private readonly maxQueue: number,
    // Keeps the file mapping alive as long as the runtime.
    private readonly mapping: ArrayBuffer,
    private readonly chatConfig: ChatConfig,
  ) {}

  static async load(options: LoadOptions): Promise<Runtime> {
    const progress = options.onProgress ?? (() => {});
    const backendName = options.backend ?? 'cpu';
    if (backendName !== 'cpu' && backendName !== 'cuda' && backendName !== 'webgpu' && backendName !== 'auto') {
      throw new InvalidArgumentError(`backend '${backendName}' is not available in this build; use 'cpu', 'cuda', 'webgpu' or 'auto'`, 'backend');
    }
    // 'auto' takes a CUDA device when one is usable; the weights' upload is the last tenth of the load.
    const useCuda = backendName === 'cuda' || (backendName === 'auto' && cudaDevices().devices.length > 0);
    // Without CUDA, 'auto' takes a hardware WebGPU adapter, never a software one (lavapipe is slower than the CPU backend).
    const useWebGpu = !useCuda && (backendName === 'webgpu' || (backendName === 'auto' && (await hardwareWebGpuAvailable())));
    const backend: Backend = useCuda ? new CudaBackend({ onProgress: (f) => progress(0.9 + 0.1 * f) }) : useWebGpu ? new WebGpuBackend() : new CpuBackend();
    progress(0);
    const { file, buffer } = openGguf(options.model);
    const hparams = readHParams(file);
    const tokenizer = tokenizerFromGguf(file);
    const threads = options.threads ?? native().cpuFeatures().physicalCores ?? availableParallelism();
    const contextSize = options.contextSize ?? Math.min(hparams.contextLength, DEFAULT_MAX_CONTEXT);
    const kvCacheType = options.kvCacheType ?? 'f32';
    checkInt('contextSize', contextSize, 1, 1 << 22);
    if (kvCacheType !== 'f32' && kvCacheType !== 'f16') throw new InvalidArgumentError(`kvCacheType must be 'f32' or 'f16'`, 'kvCacheType');
    const slots = options.slots === 'auto' ? autoSlots(hparams, contextSize, kvCacheType) : options.slots ?? 1;
    const maxBatch = options.maxBatch ?? 512;
    const maxQueue = options.maxQueue ?? Infinity;
    checkInt('slots', slots, 1, 256);
    checkInt('maxBatch', maxBatch, 1, 65536);
    if (maxBatch < slots) throw new InvalidArgumentError(`maxBatch (${maxBatch}) must be at least slots (${slots}): a step holds every running sequence's token`, 'maxBatch');
    if (maxQueue !== Infinity) checkInt('maxQueue', maxQueue, 0, 1 << 20);
    checkInt('threads', threads, 1, 512);

    const graph = buildDecoderGraph(hparams, new ModelWeights(file, buffer, hparams.architecture));
    await prefault(buffer, file.dataOffset, (f) => progress(f * 0.9));
    const compiled = await backend.compile(graph, { slots, contextSize, maxBatch, kvCacheType, threads });
    progress(1);
    const name = file.metadata.get('general.name');
    const info: RuntimeInfo = {
      path: options.model,
      architecture: hparams.architecture,
      name: typeof name === 'string' ? name : null,
      hparams,
      backend: backend.name,
      threads,
      contextSize,
      slots,
      maxBatch,
      kvCacheType,
    };
    const { chatTemplate, toolCallFormat, replay, logger } = options;
    const chatConfig: ChatConfig = { chatTemplate, toolCallFormat, replay, logger };
    const pool = new SlotPool(slots);
    const steps = new Scheduler(compiled, maxBatch, pool.all);
    if (options.onStep) steps.onStep = options.onStep;
    const runtime = new Runtime(info, tokenizer, file, compiled, pool, steps, maxQueue, buffer, chatConfig);
    // A chat template is parsed and tried at load: one that does not parse, or cannot render a
    // short conversation within its limits, fails the load instead of every chat request.
    if (chatTemplate !== undefined || typeof file.metadata.get('tokenizer.chat_template') === 'string') {
      try {
        runtime.chats();
      } catch (err) {
        compiled.dispose();
        throw err;
      }
    }
    return runtime;
  }

  /** Test and metrics hook: called with how long each request waited for a slot, in milliseconds. */
  onQueueWait: ((ms: number) => void) | null = null;

  /** What the runtime is doing now. */
  get load(): RuntimeLoad {
    const all = this.slots.all;
    return {
      running: this.slots.size - this.slots.freeCount,
      waiting: this.slots.queueDepth,
      lastStepTokens: this.steps.stats.lastStepTokens,
      kvUsed: all.reduce((n, s) => n + s.tokens.length, 0),
      kvCapacity: all.length * this.info.contextSize,
    };
  }

  tokenize(text: string, opts: { addBos?: boolean; parseSpecial?: boolean } = {}): number[] {
    return this.tokenizer.encode(text, { addSpecial: opts.addBos ?? true, parseSpecial: opts.parseSpecial ?? false });
  }

  /**
   * The ids of a prompt text (BOS as the model says), tokenized in slices that let the event loop
   * run between them. Text that cannot fit the context is refused with a
   * ContextLengthExceededError: by its length in characters before any tokenizing, else as soon as
   * the ids outnumber the context.
   */
  async tokenizePrompt(text: string): Promise<number[]> {
    const contextSize = this.info.contextSize;
    checkPromptChars(text, contextSize, this.tokenizer.maxTokenChars);
    const ids = await this.tokenizer.encodeAsync(text, { maxTokens: contextSize });
    if (ids.length > contextSize) throw new ContextLengthExceededError(ids.length, contextSize, { atLeast: true });
    return ids;
  }

  detokenize(ids: ArrayLike<number>): string {
    return this.tokenizer.decode(ids);
  }

  async complete(options: CompleteOptions): Promise<CompleteResult> {
    if (this.closed) throw new RuntimeClosedError();
    const { prompt, maxTokens = 256, stop = [], signal, onStart, onToken, logprobs, onLogprob, grammar, ...sampling } = options;
    const ids = typeof prompt === 'string' ? await this.tokenizePrompt(prompt) : checkTokenIds(prompt, this.tokenizer.vocabSize);
    checkInt('maxTokens', maxTokens, 0, Number.MAX_SAFE_INTEGER);
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s.length === 0)) {
      throw new InvalidArgumentError('stop must be an array of non-empty strings', 'stop');
    }
    const constraint = grammar === undefined ? null : new AnswerGrammarConstraint({
      matcher: compileGrammar(grammar, this.tokenizer), startsInReasoning: false, mayThink: false, encode: (text) => this.tokenizer.encode(text, { addSpecial: false }),
    });
    return this.generateOnSlot({
      prompt: ids, maxTokens, sampling, stop, ...(signal ? { signal } : {}), ...(onStart ? { onStart } : {}), ...(onToken ? { onText: onToken } : {}),
      ...(logprobs !== undefined ? { logprobs } : {}), ...(onLogprob ? { onLogprob } : {}), ...(constraint !== null ? { constraint } : {}),
    });
  }

  /**
   * Chat completion: OpenAI-shaped messages rendered with the model's chat template, tool calls
   * parsed, recorded assistant turns replayed token for token (see ChatOptions).
   */
  async chat(options: ChatOptions): Promise<ChatResult> {
    return this.chats().chat(options);
  }

  /** chat() as typed events, as they are generated; leaving the loop early cancels the generation. */
  async *chatStream(options: ChatOptions): AsyncGenerator<ChatStreamEvent> {
    yield* this.chats().stream(options);
  }

  /** The slot a chat with these messages would take, its reused prefix, and where the prompt first differs from it. */
  explainCache(messages: ChatMessage[], options?: ExplainCacheOptions): CacheExplanation {
    return this.chats().explain(messages, options);
  }

  private chats(): ChatEngine {
    if (this.closed) throw new RuntimeClosedError();
    this.chatEngine ??= new ChatEngine({
      tokenizer: this.tokenizer,
      gguf: this.gguf,
      contextSize: this.info.contextSize,
      generate: (req) => this.generateOnSlot(req),
      cachedTokens: () => this.slots.cachedTokens(),
    }, this.chatConfig);
    return this.chatEngine;
  }

  /** One generation on the slot whose cache best matches the prompt. */
  private async generateOnSlot(req: GenerateRequest): Promise<GenerateResult> {
    if (this.closed) throw new RuntimeClosedError();
    this.running++;
    try {
      if (this.slots.queueDepth >= this.maxQueue && !this.slots.hasFree) throw new QueueFullError(this.maxQueue);
      const queued = performance.now();
      const slot = await this.slots.acquire(req.prompt, req.signal);
      this.onQueueWait?.(performance.now() - queued);
      try {
        return await generate({ steps: this.steps, tokenizer: this.tokenizer, contextSize: this.info.contextSize }, slot, req);
      } finally {
        this.slots.release(slot);
      }
    } finally {
      this.running--;
    }
  }

  /**
   * Teacher forcing: evaluates `tokens` from position 0 and returns the logits after every token,
   * (tokens.length, vocab) row-major.
   */
  async evaluate(tokens: number[]): Promise<Float32Array> {
    if (this.closed) throw new RuntimeClosedError();
    checkTokenIds(tokens, this.tokenizer.vocabSize);
    if (tokens.length === 0 || tokens.length > this.info.contextSize) throw new ContextLengthExceededError(tokens.length, this.info.contextSize);
    const width = this.graph.outputWidth;
    const out = new Float32Array(tokens.length * width);
    const chunk = this.info.maxBatch;
    this.running++;
    const slot = await this.slots.acquire([]);
    try {
      // Every row's logits: a pass of its own between two batched steps.
      await this.steps.runExclusive(async () => {
        slot.tokens.length = 0;
        for (let start = 0; start < tokens.length; start += chunk) {
          const part = tokens.slice(start, start + chunk);
          const positions = Int32Array.from(part, (_, i) => start + i);
          await this.graph.forward(Int32Array.from(part), positions, slot.index, true, out.subarray(start * width, (start + part.length) * width));
          for (const t of part) slot.tokens.push(t);
        }
      });
      return out;
    } finally {
      this.slots.release(slot);
      this.running--;
    }
  }

  /** Frees the KV cache and thread pool. Waits for nothing: close after requests finish. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.running > 0) await new Promise((r) => setTimeout(r, 5));
    this.graph.dispose();
  }
}

/** AUTO_SLOTS, or fewer where their KV cache would take more than AUTO_KV_MEMORY_SHARE of memory; at least 1. */
function autoSlots(hp: HParams, contextSize: number, kvCacheType: 'f32' | 'f16'): number {
  const perSlot = 2 * hp.nLayers * contextSize * hp.nKvHeads * hp.headDim * (kvCacheType === 'f16' ? 2 : 4);
  return Math.max(1, Math.min(AUTO_SLOTS, Math.floor((totalmem() * AUTO_KV_MEMORY_SHARE) / perSlot)));
}

function checkInt(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}], got ${value}`, name);
  }
}

function checkTokenIds(ids: number[], vocabSize: number): number[] {
  if (!Array.isArray(ids) || ids.some((t) => !Number.isInteger(t) || t < 0 || t >= vocabSize)) {
    throw new InvalidArgumentError(`prompt token ids must be integers in [0, ${vocabSize})`, 'prompt');
  }
  return ids;
}

/** Touches every page of the weights so the first forward step does not stall on disk. */
async function prefault(buffer: ArrayBuffer, from: number, progress: (fraction: number) => void): Promise<number> {
  const bytes = new Uint8Array(buffer);
  const total = bytes.length - from;
  let sink = 0;
  for (let start = from; start < bytes.length; start += PREFAULT_CHUNK) {
    const end = Math.min(start + PREFAULT_CHUNK, bytes.length);
    for (let i = start; i < end; i += 4096) sink ^= bytes[i]!;
    progress(total > 0 ? (end - from) / total : 1);
    await new Promise((r) => setImmediate(r));
  }
  return sink; // returned so the reads are not optimized away
}
