// The OpenAI Responses streaming encoder: events -> response.created, response.in_progress, then
// one output item per message segment, reasoning segment and call (output_item.added, its content
// part and deltas, the .done events, output_item.done), then response.completed (or
// response.incomplete when the token limit cut it). Every event carries a sequence_number. Item
// ids are minted once, when the item is added, and name the response (see response-items.ts);
// whitespace alone opens no message item; the items recorded here are exactly the ones streamed,
// in order, and become the response object (and what the store keeps). A call that started but
// was never confirmed is closed as `incomplete`, and so is the item the token limit cut. Reasoning
// items carry their text as `reasoning_text` content (OpenAI's shape for a model's raw reasoning),
// and sealed in `encrypted_content` when the request includes it.
import type { Usage } from '../generate/generate.js';
import type { ToolCallLogger } from '../tool-calls/types.js';
import { type GenerationDone, type GenerationEvent, type GenerationStart, type StreamEncoder, sseEvent } from './generation-events.js';
import { type ItemPrefix, mintItemId } from './response-items.js';
import { sealReasoning } from './sealed-reasoning.js';

export type ResponseItemStatus = 'in_progress' | 'completed' | 'incomplete';

export type ResponseOutputItem =
  | {
      id: string;
      type: 'message';
      status: ResponseItemStatus;
      role: 'assistant';
      content: { type: 'output_text'; text: string; annotations: []; logprobs: [] }[];
    }
  | {
      id: string;
      type: 'reasoning';
      status: ResponseItemStatus;
      summary: [];
      content: { type: 'reasoning_text'; text: string }[];
      encrypted_content?: string;
    }
  | { id: string; type: 'function_call'; status: ResponseItemStatus; call_id: string; name: string; arguments: string };

/** The response object with everything but status, output and usage (echoed request fields). */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  error: null | { code: string; message: string };
  incomplete_details: null | { reason: 'max_output_tokens' };
  output: ResponseOutputItem[];
  usage: null | object;
  [field: string]: unknown;
}

export function responsesUsage(u: Usage): object {
  return {
    input_tokens: u.promptTokens,
    input_tokens_details: { cached_tokens: u.cachedTokens },
    output_tokens: u.completionTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

interface Current {
  item: ResponseOutputItem;
  outputIndex: number;
  /** Streamer call index, for function calls. */
  call: number;
}

export interface ResponsesEncoderOptions {
  requestId?: string;
  /** `include: ["reasoning.encrypted_content"]`: reasoning items carry their text sealed too. */
  sealReasoning?: boolean;
}

export class ResponsesEncoder implements StreamEncoder {
  private seq = 0;
  private current: Current | null = null;
  private readonly calls = new Map<number, Current>();
  private readonly warned = new Set<number>();
  private pendingSpace = '';

  constructor(
    readonly response: ResponseObject,
    private readonly logger: ToolCallLogger,
    private readonly opts: ResponsesEncoderOptions = {},
  ) {}

  open(_start: GenerationStart): string {
    return this.event('response.created', { response: this.response }) + this.event('response.in_progress', { response: this.response });
  }

  push(ev: GenerationEvent): string {
    switch (ev.type) {
      case 'logprob':
        return '';
      case 'content': {
        let out = '';
        if (this.current?.item.type !== 'message') {
          // Whitespace alone (between calls, after reasoning) opens no message item.
          if (ev.text.trim() === '') {
            this.pendingSpace += ev.text;
            return '';
          }
          out += this.begin(this.messageItem(), -1);
        }
        const { item, outputIndex } = this.current!;
        const delta = this.pendingSpace + ev.text;
        this.pendingSpace = '';
        if (item.type === 'message') item.content[0]!.text += delta;
        out += this.event('response.output_text.delta', { item_id: item.id, output_index: outputIndex, content_index: 0, delta, logprobs: [] });
        return out;
      }
      case 'reasoning': {
        let out = this.current?.item.type === 'reasoning' ? '' : this.begin(this.reasoningItem(), -1);
        const { item, outputIndex } = this.current!;
        if (item.type === 'reasoning') item.content[0]!.text += ev.text;
        out += this.event('response.reasoning_text.delta', { item_id: item.id, output_index: outputIndex, content_index: 0, delta: ev.text });
        return out;
      }
      case 'tool_call_start': {
        if (this.calls.has(ev.index)) return '';
        const item: ResponseOutputItem = {
          id: this.itemId('fc_'), type: 'function_call', status: 'in_progress', call_id: ev.id, name: ev.name, arguments: '',
        };
        return this.begin(item, ev.index);
      }
      case 'tool_call_arguments': {
        const cur = this.calls.get(ev.index);
        if (!cur || cur.item.type !== 'function_call') return '';
        if (cur.item.status !== 'in_progress') {
          if (!this.warned.has(ev.index)) {
            this.warned.add(ev.index);
            this.logger.warn('tool-call argument text arrived after its item was done; it is not sent', {
              requestId: this.opts.requestId, index: ev.index, name: cur.item.name,
            });
          }
          return '';
        }
        cur.item.arguments += ev.delta;
        return this.event('response.function_call_arguments.delta', { item_id: cur.item.id, output_index: cur.outputIndex, delta: ev.delta });
      }
      case 'tool_call_end': {
        const cur = this.calls.get(ev.index);
        if (!cur || cur.item.status !== 'in_progress') return '';
        return this.close(cur, true);
      }
    }
  }

  finish(done: GenerationDone): string {
    const cut = done.finishReason === 'length';
    let out = this.current ? this.close(this.current, false, cut) : '';
    this.response.status = cut ? 'incomplete' : 'completed';
    this.response.incomplete_details = cut ? { reason: 'max_output_tokens' } : null;
    this.response.usage = responsesUsage(done.usage);
    out += this.event(cut ? 'response.incomplete' : 'response.completed', { response: this.response });
    return out;
  }

  error(body: object): string {
    const err = (body as { error?: { message?: string; code?: string; param?: string | null } }).error ?? {};
    this.response.status = 'failed';
    this.response.error = { code: err.code ?? 'server_error', message: err.message ?? '' };
    return this.event('error', { code: err.code ?? null, message: err.message ?? '', param: err.param ?? null });
  }

  /** True when a confirmed call reached the client. */
  get calledTools(): boolean {
    return this.response.output.some((i) => i.type === 'function_call' && i.status === 'completed');
  }

  private messageItem(): ResponseOutputItem {
    return { id: this.itemId('msg_'), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  }

  private reasoningItem(): ResponseOutputItem {
    return { id: this.itemId('rs_'), type: 'reasoning', status: 'in_progress', summary: [], content: [] };
  }

  /** The id of the item about to be added. */
  private itemId(prefix: ItemPrefix): string {
    return mintItemId(prefix, this.response.id, this.response.output.length);
  }

  private begin(item: ResponseOutputItem, call: number): string {
    if (item.type !== 'message') this.pendingSpace = '';
    let out = this.current ? this.close(this.current, false) : '';
    const cur: Current = { item, outputIndex: this.response.output.length, call };
    this.response.output.push(item);
    this.current = cur;
    if (item.type === 'function_call') this.calls.set(call, cur);
    out += this.event('response.output_item.added', { output_index: cur.outputIndex, item: { ...item } });
    if (item.type === 'message') {
      item.content.push({ type: 'output_text', text: '', annotations: [], logprobs: [] });
      out += this.event('response.content_part.added', {
        item_id: item.id, output_index: cur.outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
    } else if (item.type === 'reasoning') {
      item.content.push({ type: 'reasoning_text', text: '' });
      out += this.event('response.content_part.added', {
        item_id: item.id, output_index: cur.outputIndex, content_index: 0, part: { type: 'reasoning_text', text: '' },
      });
    }
    return out;
  }

  /**
   * Closes an item. A message or reasoning segment completes, unless the token limit `cut` it; a
   * call completes only when `confirmed` (tool_call_end): anything else closing it means it never
   * will be.
   */
  private close(cur: Current, confirmed: boolean, cut = false): string {
    const { item, outputIndex } = cur;
    if (this.current === cur) this.current = null;
    let out = '';
    if (item.type === 'message') {
      const part = item.content[0]!;
      out += this.event('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: part.text, logprobs: [] });
      out += this.event('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part: { ...part } });
      item.status = cut ? 'incomplete' : 'completed';
    } else if (item.type === 'reasoning') {
      const part = item.content[0]!;
      out += this.event('response.reasoning_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: part.text });
      out += this.event('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part: { ...part } });
      item.status = cut ? 'incomplete' : 'completed';
      if (this.opts.sealReasoning) item.encrypted_content = sealReasoning(part.text);
    } else {
      item.status = confirmed ? 'completed' : 'incomplete';
      if (confirmed) {
        out += this.event('response.function_call_arguments.done', {
          item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments,
        });
      }
    }
    return out + this.event('response.output_item.done', { output_index: outputIndex, item });
  }

  private event(type: string, fields: object): string {
    return sseEvent(type, JSON.stringify({ type, sequence_number: this.seq++, ...fields }));
  }
}
