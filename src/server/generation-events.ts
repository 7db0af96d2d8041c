// What the protocol encoders consume: the tool-call streamer's events (content, reasoning, calls),
// with logprobs each token's entry before its text, and one `done` at the end. Routes adapt
// runtime.complete() and runtime.chatStream() to these.
import type { FinishReason, TokenLogprob, Usage } from '../generate/generate.js';
import type { ToolCallEvent } from '../tool-calls/types.js';

export type { ToolCallEvent };

export type GenerationEvent = ToolCallEvent | { type: 'logprob'; logprob: TokenLogprob };

export interface GenerationDone {
  finishReason: FinishReason;
  /** The stop string that ended generation; null or absent when none did. */
  stopSequence?: string | null;
  usage: Usage;
}

/** Prompt facts known when the first frames go out (before any text). */
export interface GenerationStart {
  promptTokens: number;
  cachedTokens: number;
}

/** One protocol's streaming encoder: events in, SSE frames out. */
export interface StreamEncoder {
  /** The frames that open the stream (role chunk, message_start, response.created...). */
  open(start: GenerationStart): string;
  push(event: GenerationEvent): string;
  /** The closing frames: finish reason, usage, terminator. */
  finish(done: GenerationDone): string;
  /** The frames that report a failure after the stream has opened. */
  error(body: object): string;
}

export function sseData(json: string): string {
  return `data: ${json}\n\n`;
}

export function sseEvent(event: string, json: string): string {
  return `event: ${event}\ndata: ${json}\n\n`;
}
