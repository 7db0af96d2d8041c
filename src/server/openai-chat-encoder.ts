// The OpenAI Chat Completions streaming encoder: events -> `chat.completion.chunk` SSE frames, as
// OpenAI documents them. The role chunk opens, with the first event, since its `content` says what
// kind of reply follows: "" before text, null before reasoning or a tool call (as OpenAI sends it; a
// "" there makes clients such as the AI SDK open an empty text part). Content, reasoning_content and
// tool_calls deltas follow (a call's first delta carries its id, type and name with empty arguments, then argument
// fragments); the last choice chunk carries finish_reason, then an optional usage chunk, then
// `data: [DONE]`. With logprobs, each chunk carries the entries of the tokens sampled since the
// previous chunk (every generated token has one, reasoning and tool-call text included).
import type { TokenLogprob, Usage } from '../generate/generate.js';
import { type GenerationDone, type GenerationEvent, type GenerationStart, type StreamEncoder, sseData } from './generation-events.js';

export interface OpenAIChatEncoderOptions {
  id: string;
  model: string;
  created: number;
  /** stream_options.include_usage: every chunk has `usage: null` and a last chunk carries it. */
  includeUsage: boolean;
}

export type OpenAIFinishReason = 'stop' | 'length' | 'tool_calls';

export function openAIUsage(u: Usage): object {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
  };
}

/** A choice's `logprobs` object: OpenAI's ChatCompletionTokenLogprob per token. */
export function openAILogprobs(entries: readonly TokenLogprob[]): object {
  return {
    content: entries.map((e) => ({
      token: e.token,
      logprob: e.logprob,
      bytes: e.bytes,
      top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
    })),
    refusal: null,
  };
}

/** `tool_calls` only when a confirmed call reached the client. */
export function openAIFinishReason(done: GenerationDone, callsSent: number): OpenAIFinishReason {
  if (callsSent > 0) return 'tool_calls';
  return done.finishReason === 'length' ? 'length' : 'stop';
}

export class OpenAIChatEncoder implements StreamEncoder {
  // Every chunk shares its envelope; only the delta changes, so the envelope is built once.
  private readonly head: string;
  private readonly usageNull: string;
  private callsEnded = 0;
  private roleSent = false;
  /** Log-probabilities of tokens sampled since the last chunk. */
  private logprobs: TokenLogprob[] = [];

  constructor(opts: OpenAIChatEncoderOptions) {
    this.head = `{"id":${JSON.stringify(opts.id)},"object":"chat.completion.chunk","created":${opts.created},"model":${JSON.stringify(opts.model)},"system_fingerprint":null,"choices":`;
    this.usageNull = opts.includeUsage ? ',"usage":null' : '';
  }

  /** Nothing yet: the role chunk goes out with the first event (see the header). */
  open(_start: GenerationStart): string {
    return '';
  }

  push(ev: GenerationEvent): string {
    switch (ev.type) {
      case 'logprob':
        this.logprobs.push(ev.logprob);
        return '';
      case 'content':
        return this.role(true) + this.chunk(`{"content":${JSON.stringify(ev.text)}}`);
      case 'reasoning':
        return this.role(false) + this.chunk(`{"reasoning_content":${JSON.stringify(ev.text)}}`);
      case 'tool_call_start':
        return this.role(false) + this.chunk(
          `{"tool_calls":[{"index":${ev.index},"id":${JSON.stringify(ev.id)},"type":"function","function":{"name":${JSON.stringify(ev.name)},"arguments":""}}]}`,
        );
      case 'tool_call_arguments':
        return this.chunk(`{"tool_calls":[{"index":${ev.index},"function":{"arguments":${JSON.stringify(ev.delta)}}}]}`);
      case 'tool_call_end':
        this.callsEnded++;
        return '';
    }
  }

  finish(done: GenerationDone): string {
    const reason = openAIFinishReason(done, this.callsEnded);
    let out = this.role(true) + sseData(`${this.head}[{"index":0,"delta":{},"logprobs":${this.takeLogprobs()},"finish_reason":"${reason}"}]${this.usageNull}}`);
    if (this.usageNull) out += sseData(`${this.head}[],"usage":${JSON.stringify(openAIUsage(done.usage))}}`);
    return out + 'data: [DONE]\n\n';
  }

  error(body: object): string {
    return sseData(JSON.stringify(body)) + 'data: [DONE]\n\n';
  }

  /** The role chunk, once; `text` says whether the reply opens with text. */
  private role(text: boolean): string {
    if (this.roleSent) return '';
    this.roleSent = true;
    return sseData(`${this.head}[{"index":0,"delta":{"role":"assistant","content":${text ? '""' : 'null'}},"logprobs":null,"finish_reason":null}]${this.usageNull}}`);
  }

  private chunk(delta: string): string {
    return sseData(`${this.head}[{"index":0,"delta":${delta},"logprobs":${this.takeLogprobs()},"finish_reason":null}]${this.usageNull}}`);
  }

  private takeLogprobs(): string {
    if (this.logprobs.length === 0) return 'null';
    const out = JSON.stringify(openAILogprobs(this.logprobs));
    this.logprobs = [];
    return out;
  }
}
