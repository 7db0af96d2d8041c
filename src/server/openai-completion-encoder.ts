// The OpenAI (legacy) Completions streaming encoder: text -> `text_completion` SSE frames, each
// carrying one piece of text (with logprobs, the entries of the tokens sampled since the previous
// frame); the last choice chunk has finish_reason, then an optional usage chunk, then `data: [DONE]`.
import type { TokenLogprob } from '../generate/generate.js';
import { type GenerationDone, type GenerationEvent, type GenerationStart, type StreamEncoder, sseData } from './generation-events.js';
import { openAIUsage } from './openai-chat-encoder.js';

export interface OpenAICompletionEncoderOptions {
  id: string;
  model: string;
  created: number;
  includeUsage: boolean;
  /** Where the generated text starts in the returned text (the echoed prompt's length), for text_offset. */
  textOffset?: number;
}

/**
 * The legacy `logprobs` object for some tokens: their text, log-probabilities, alternatives as
 * {token: logprob} and each token's offset in the returned text, counted from `offset`.
 */
export function completionLogprobs(entries: readonly TokenLogprob[], offset: number): { logprobs: object; end: number } {
  const textOffset: number[] = [];
  for (const e of entries) {
    textOffset.push(offset);
    offset += e.token.length;
  }
  const logprobs = {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: entries.map((e) => Object.fromEntries(e.top.map((t) => [t.token, t.logprob]))),
    text_offset: textOffset,
  };
  return { logprobs, end: offset };
}

export class OpenAICompletionEncoder implements StreamEncoder {
  private readonly head: string;
  private readonly usageNull: string;
  private logprobs: TokenLogprob[] = [];
  private offset: number;

  constructor(opts: OpenAICompletionEncoderOptions) {
    this.offset = opts.textOffset ?? 0;
    this.head = `{"id":${JSON.stringify(opts.id)},"object":"text_completion","created":${opts.created},"model":${JSON.stringify(opts.model)},"system_fingerprint":null,"choices":`;
    this.usageNull = opts.includeUsage ? ',"usage":null' : '';
  }

  open(_start: GenerationStart): string {
    return '';
  }

  push(ev: GenerationEvent): string {
    if (ev.type === 'logprob') this.logprobs.push(ev.logprob);
    if (ev.type !== 'content') return '';
    return sseData(`${this.head}[{"text":${JSON.stringify(ev.text)},"index":0,"logprobs":${this.takeLogprobs()},"finish_reason":null}]${this.usageNull}}`);
  }

  finish(done: GenerationDone): string {
    const reason = done.finishReason === 'length' ? 'length' : 'stop';
    let out = sseData(`${this.head}[{"text":"","index":0,"logprobs":${this.takeLogprobs()},"finish_reason":"${reason}"}]${this.usageNull}}`);
    if (this.usageNull) out += sseData(`${this.head}[],"usage":${JSON.stringify(openAIUsage(done.usage))}}`);
    return out + 'data: [DONE]\n\n';
  }

  error(body: object): string {
    return sseData(JSON.stringify(body)) + 'data: [DONE]\n\n';
  }

  private takeLogprobs(): string {
    if (this.logprobs.length === 0) return 'null';
    const { logprobs, end } = completionLogprobs(this.logprobs, this.offset);
    this.offset = end;
    this.logprobs = [];
    return JSON.stringify(logprobs);
  }
}
