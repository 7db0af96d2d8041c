// What every route shares: the runtime, the served model's name, metrics, the Responses store,
// the logger, and the server-wide cancel signal used by graceful shutdown.
import type { FastifyReply } from 'fastify';
import type { ChatOptions, ChatStreamEvent } from '../runtime/chat.js';
import type { CompleteOptions, CompleteResult, RuntimeInfo, RuntimeLoad } from '../runtime/runtime.js';
import type { ToolCallLogger } from '../tool-calls/types.js';
import { GenerationCancelledError, ModelNotFoundError } from './errors.js';
import { Metrics } from './metrics.js';
import { ResponsesStore } from './responses-store.js';
import { SSE_STALL_TIMEOUT_MS } from './sse-stream.js';

/** The part of Runtime the server uses. */
export interface ServedRuntime {
  readonly info: RuntimeInfo;
  readonly tokenizer: { readonly vocabSize: number };
  complete(options: CompleteOptions): Promise<CompleteResult>;
  chatStream(options: ChatOptions): AsyncIterable<ChatStreamEvent>;
  tokenize(text: string, opts?: { addBos?: boolean; parseSpecial?: boolean }): number[];
  tokenizePrompt(text: string): Promise<number[]>;
  detokenize(ids: ArrayLike<number>): string;
  /** What the runtime is doing now (gauges); absent on a runtime that does not say. */
  readonly load?: RuntimeLoad;
  /** Set by the server: told how long each request waited for a slot. */
  onQueueWait?: ((ms: number) => void) | null;
}

const IDLE: RuntimeLoad = { running: 0, waiting: 0, lastStepTokens: 0, kvUsed: 0, kvCapacity: 0 };

export interface ServerLogger extends ToolCallLogger {
  info(msg: string, fields?: object): void;
}

export class ClientGoneError extends Error {
  constructor() {
    super('the client closed the connection');
  }
}

export class ServerContext {
  readonly metrics: Metrics;
  readonly store: ResponsesStore;
  /** The signals of requests in flight, for shutdown to cancel. */
  private readonly live = new Set<AbortController>();
  private cancelled = false;
  private readonly created = Math.floor(Date.now() / 1000);
  draining = false;
  /** How long a stream waits for a client that stopped reading (see SseStream). */
  sseStallTimeoutMs = SSE_STALL_TIMEOUT_MS;

  constructor(
    readonly runtime: ServedRuntime,
    readonly modelId: string,
    readonly logger: ServerLogger,
    responsesStoreSize: number,
    responsesStoreBytes?: number,
  ) {
    this.metrics = new Metrics(runtime.info.slots, () => runtime.load ?? IDLE);
    runtime.onQueueWait = (ms: number) => this.metrics.queueWait.observe(ms / 1000);
    this.store = new ResponsesStore(responsesStoreSize, responsesStoreBytes);
  }

  get modelCreated(): number {
    return this.created;
  }

  /** Unknown models are a 404: one server serves one model. */
  checkModel(model: string): void {
    if (model !== this.modelId) throw new ModelNotFoundError(model, this.modelId);
  }

  /**
   * Aborted when the client goes away before the response is complete (its reason a
   * ClientGoneError) or when shutdown cancels generations (a GenerationCancelledError).
   * (One controller per request: AbortSignal.any costs tens of microseconds per call.)
   */
  requestSignal(reply: FastifyReply): AbortSignal {
    const controller = new AbortController();
    if (this.cancelled) controller.abort(new GenerationCancelledError());
    this.live.add(controller);
    const res = reply.raw;
    res.once('close', () => {
      this.live.delete(controller);
      if (!res.writableFinished) controller.abort(new ClientGoneError());
    });
    return controller.signal;
  }

  cancelGenerations(): void {
    this.cancelled = true;
    for (const c of this.live) c.abort(new GenerationCancelledError());
  }
}
