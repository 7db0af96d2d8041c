// Runs one generation for a route and delivers it: streamed through a protocol encoder as SSE, or
// collected for a JSON body. Both paths see the same events, count in-flight generations for the
// queue-depth gauge, record token metrics, and cancel the generation when the client leaves or
// the server stops waiting.
import type { FastifyReply } from 'fastify';
import type { Timings } from '../generate/generate.js';
import { toKilnError, errorBody, type Protocol } from './error-body.js';
import { GenerationCancelledError } from './errors.js';
import type { GenerationDone, GenerationEvent, GenerationStart, StreamEncoder } from './generation-events.js';
import { ClientGoneError, type ServerContext } from './server-context.js';
import { SseStream } from './sse-stream.js';

export interface GenerationSink {
  /** The prompt facts, before the first event; when never called, the stream opens at the first event. */
  start(start: GenerationStart): void;
  push(ev: GenerationEvent): void;
}

export interface GenerationOutcome {
  done: GenerationDone;
  timings?: Timings;
}

export type GenerationRun = (sink: GenerationSink, signal: AbortSignal) => Promise<GenerationOutcome>;

const NO_START: GenerationStart = { promptTokens: 0, cachedTokens: 0 };

async function tracked(ctx: ServerContext, run: GenerationRun, sink: GenerationSink, signal: AbortSignal): Promise<GenerationOutcome> {
  ctx.metrics.generationsInFlight++;
  const started = performance.now();
  let last = -1;
  // Time to first token and between tokens, as the events leave for the client.
  const timed: GenerationSink = {
    start: (s) => sink.start(s),
    push: (ev) => {
      const now = performance.now();
      if (last < 0) ctx.metrics.timeToFirstToken.observe((now - started) / 1000);
      else ctx.metrics.interTokenLatency.observe((now - last) / 1000);
      last = now;
      sink.push(ev);
    },
  };
  try {
    const outcome = await run(timed, signal);
    ctx.metrics.generation(outcome.done.usage, outcome.timings);
    return outcome;
  } finally {
    ctx.metrics.generationsInFlight--;
  }
}

export async function streamGeneration(
  ctx: ServerContext,
  reply: FastifyReply,
  protocol: Protocol,
  encoder: StreamEncoder,
  run: GenerationRun,
): Promise<void> {
  const signal = ctx.requestSignal(reply);
  const sse = new SseStream(reply, ctx.sseStallTimeoutMs);
  const start = (s: GenerationStart) => {
    if (!sse.isOpen) sse.write(encoder.open(s));
  };
  const push = (ev: GenerationEvent) => {
    start(NO_START);
    sse.write(encoder.push(ev));
  };
  try {
    const { done } = await tracked(ctx, run, { start, push }, signal);
    if (signal.aborted && signal.reason instanceof ClientGoneError) return;
    start({ promptTokens: done.usage.promptTokens, cachedTokens: done.usage.cachedTokens });
    if (done.finishReason === 'abort') {
      sse.write(encoder.error(errorBody(protocol, new GenerationCancelledError())));
    } else {
      sse.write(encoder.finish(done));
    }
  } catch (err) {
    if (signal.aborted && signal.reason instanceof ClientGoneError) {
      if (!sse.isOpen) reply.hijack();
      return;
    }
    if (!sse.isOpen) throw err;
    const { error, internal } = toKilnError(err);
    if (internal) ctx.logger.error('generation failed mid-stream', { error: String((err as Error)?.stack ?? err) });
    sse.write(encoder.error(errorBody(protocol, error)));
  } finally {
    sse.end();
  }
}

/**
 * Runs the generation to the end and hands every event to `onEvent`. Returns null when
 * the client left (nothing should be sent).
 */
export async function collectGeneration(
  ctx: ServerContext,
  reply: FastifyReply,
  run: GenerationRun,
  onEvent: (ev: GenerationEvent) => void,
): Promise<GenerationOutcome | null> {
  const signal = ctx.requestSignal(reply);
  try {
    const outcome = await tracked(ctx, run, { start() {}, push: onEvent }, signal);
    if (signal.aborted && signal.reason instanceof ClientGoneError) {
      reply.hijack();
      return null;
    }
    if (outcome.done.finishReason === 'abort') throw new GenerationCancelledError();
    return outcome;
  } catch (err) {
    if (signal.aborted && signal.reason instanceof ClientGoneError) {
      reply.hijack();
      return null;
    }
    throw err;
  }
}
