// The OpenAI (legacy) Completions streaming encoder: text -> `text_completion` SSE frames, each
// carrying one piece of text; the last choice chunk has finish_reason, then an optional usage
// chunk, then `data: [DONE]`.
import { type GenerationDone, type GenerationStart, type StreamEncoder, type ToolCallEvent, sseData } from './generation-events.js';
import { openAIUsage } from './openai-chat-encoder.js';

export interface OpenAICompletionEncoderOptions {
  id: string;
  model: string;
  created: number;
  includeUsage: boolean;
}

export class OpenAICompletionEncoder implements StreamEncoder {
  private readonly head: string;
  private readonly usageNull: string;

  constructor(opts: OpenAICompletionEncoderOptions) {
    this.head = `{"id":${JSON.stringify(opts.id)},"object":"text_completion","created":${opts.created},"model":${JSON.stringify(opts.model)},"system_fingerprint":null,"choices":`;
    this.usageNull = opts.includeUsage ? ',"usage":null' : '';
  }

  open(_start: GenerationStart): string {
    return '';
  }

  push(ev: ToolCallEvent): string {
    if (ev.type !== 'content') return '';
    return sseData(`${this.head}[{"text":${JSON.stringify(ev.text)},"index":0,"logprobs":null,"finish_reason":null}]${this.usageNull}}`);
  }

  finish(done: GenerationDone): string {
    const reason = done.finishReason === 'length' ? 'length' : 'stop';
    let out = sseData(`${this.head}[{"text":"","index":0,"logprobs":null,"finish_reason":"${reason}"}]${this.usageNull}}`);
    if (this.usageNull) out += sseData(`${this.head}[],"usage":${JSON.stringify(openAIUsage(done.usage))}}`);
    return out + 'data: [DONE]\n\n';
  }

  error(body: object): string {
    return sseData(JSON.stringify(body)) + 'data: [DONE]\n\n';
  }
}
