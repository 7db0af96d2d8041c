// The Anthropic Messages streaming encoder: events -> message_start, ping, content blocks (text,
// thinking, tool_use) each opened by content_block_start, filled by text_delta / thinking_delta /
// input_json_delta and closed by content_block_stop, then message_delta (stop_reason, usage) and
// message_stop. Blocks go out one at a time, in order.
//
// Tool calls are released early: a call's block closes as soon as the streamer confirms it
// (tool_call_end), while later calls are still being generated. A confirmed call whose arguments
// are still empty cannot close yet (the end of stream may fill them in): it becomes a barrier, and
// everything after it waits until the end. A call that started but will never be confirmed is
// closed when the next block starts and does not count toward stop_reason "tool_use". Text that
// is only whitespace opens no block. The encoder also records the blocks, which is the
// non-streaming response body.
//
// Tool ids go out as `toolu_` ids (anthropic-tool-ids.ts). A thinking block ends with a
// signature_delta, as Anthropic's do, and the non-streaming block carries the same signature: the
// block's text, sealed (sealed-reasoning.ts), so the thinking comes back whole even from a client
// that kept only the signature; with thinking shown "omitted" that is all the client gets.
import type { ToolCallLogger } from '../tool-calls/types.js';
import { toAnthropicToolId } from './anthropic-tool-ids.js';
import { sealReasoning } from './sealed-reasoning.js';
import { type GenerationDone, type GenerationEvent, type GenerationStart, type StreamEncoder, type ToolCallEvent, sseEvent } from './generation-events.js';

export type AnthropicStopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';

export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown };

export interface AnthropicEncoderOptions {
  id: string;
  model: string;
  logger: ToolCallLogger;
  requestId?: string;
  /** `thinking.display: "omitted"`: thinking blocks carry no text, only the signature. */
  omitThinking?: boolean;
}

interface OpenBlock {
  index: number;
  kind: 'text' | 'thinking' | 'tool';
  call: number;
  id: string;
  name: string;
  args: string;
  ended: boolean;
  closed: boolean;
  text: string;
  /** A thinking block's, once it is closed. */
  signature: string;
}

export function anthropicUsage(start: GenerationStart, outputTokens: number): object {
  return {
    input_tokens: start.promptTokens - start.cachedTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: start.cachedTokens,
    output_tokens: outputTokens,
  };
}

export class AnthropicMessagesEncoder implements StreamEncoder {
  private readonly blocks: OpenBlock[] = [];
  private readonly byCall = new Map<number, OpenBlock>();
  private readonly warned = new Set<number>();
  private current: OpenBlock | null = null;
  /** A confirmed call with empty arguments: its block stays open and later events wait. */
  private barrier: OpenBlock | null = null;
  private readonly held: ToolCallEvent[] = [];
  private pendingSpace = '';
  private start: GenerationStart = { promptTokens: 0, cachedTokens: 0 };
  private stopReason: AnthropicStopReason = 'end_turn';
  private stopSequence: string | null = null;

  constructor(private readonly opts: AnthropicEncoderOptions) {}

  open(start: GenerationStart): string {
    this.start = start;
    const message = {
      id: this.opts.id,
      type: 'message',
      role: 'assistant',
      model: this.opts.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: anthropicUsage(start, 0),
    };
    return sseEvent('message_start', JSON.stringify({ type: 'message_start', message })) + sseEvent('ping', '{"type":"ping"}');
  }

  push(ev: GenerationEvent): string {
    if (ev.type === 'logprob') return ''; // Anthropic has no log-probabilities
    const barrier = this.barrier;
    if (barrier !== null) {
      if (ev.type === 'tool_call_arguments' && ev.index === barrier.call) return this.delta(barrier, ev.delta);
      if (ev.type !== 'tool_call_end' || ev.index !== barrier.call) this.held.push(ev);
      return '';
    }
    return this.handle(ev, false);
  }

  finish(done: GenerationDone): string {
    let out = '';
    if (this.barrier !== null) {
      out += this.close(this.barrier);
      this.barrier = null;
      for (const ev of this.held.splice(0)) out += this.handle(ev, true);
    }
    if (this.current !== null) out += this.close(this.current);
    this.current = null;
    const confirmed = this.blocks.some((b) => b.kind === 'tool' && b.ended);
    const stopSequence = done.stopSequence ?? null;
    this.stopReason = confirmed ? 'tool_use' : stopSequence !== null ? 'stop_sequence' : done.finishReason === 'length' ? 'max_tokens' : 'end_turn';
    this.stopSequence = this.stopReason === 'stop_sequence' ? stopSequence : null;
    out += sseEvent(
      'message_delta',
      JSON.stringify({
        type: 'message_delta',
        delta: { stop_reason: this.stopReason, stop_sequence: this.stopSequence },
        usage: anthropicUsage(this.start, done.usage.completionTokens),
      }),
    );
    return out + sseEvent('message_stop', '{"type":"message_stop"}');
  }

  error(body: object): string {
    return sseEvent('error', JSON.stringify(body));
  }

  /** After finish(): the reply's content blocks (confirmed calls only), stop reason and stop sequence. */
  get result(): { content: AnthropicBlock[]; stopReason: AnthropicStopReason; stopSequence: string | null } {
    const content: AnthropicBlock[] = [];
    for (const b of this.blocks) {
      if (b.kind === 'text') content.push({ type: 'text', text: b.text });
      else if (b.kind === 'thinking') content.push({ type: 'thinking', thinking: this.opts.omitThinking ? '' : b.text, signature: b.signature });
      else if (b.ended) content.push({ type: 'tool_use', id: toAnthropicToolId(b.id), name: b.name, input: parseInput(b.args) });
    }
    return { content, stopReason: this.stopReason, stopSequence: this.stopSequence };
  }

  private handle(ev: ToolCallEvent, finishing: boolean): string {
    switch (ev.type) {
      case 'content':
      case 'reasoning': {
        const kind = ev.type === 'content' ? 'text' : 'thinking';
        let text = ev.text;
        let out = '';
        if (this.current?.kind !== kind) {
          // Whitespace alone does not open a block (models write newlines between calls and
          // after thinking); it goes out with the block's first visible text.
          if (kind === 'text' && text.trim() === '') {
            this.pendingSpace += text;
            return '';
          }
          out += this.begin(kind, -1, '', '');
        }
        if (kind === 'text') {
          text = this.pendingSpace + text;
          this.pendingSpace = '';
        }
        return out + this.delta(this.current!, text);
      }
      case 'tool_call_start':
        if (this.byCall.has(ev.index)) return '';
        return this.begin('tool', ev.index, ev.id, ev.name);
      case 'tool_call_arguments': {
        const block = this.byCall.get(ev.index);
        return block ? this.delta(block, ev.delta) : '';
      }
      case 'tool_call_end': {
        const block = this.byCall.get(ev.index);
        if (!block || block.closed || block.ended) return '';
        block.ended = true;
        if (block.args.length === 0 && !finishing) {
          this.barrier = block;
          return '';
        }
        this.current = null;
        return this.close(block);
      }
    }
  }

  private begin(kind: OpenBlock['kind'], call: number, id: string, name: string): string {
    let out = '';
    if (kind !== 'text') this.pendingSpace = '';
    if (this.current !== null) out += this.close(this.current);
    const block: OpenBlock = { index: this.blocks.length, kind, call, id, name, args: '', ended: false, closed: false, text: '', signature: '' };
    this.blocks.push(block);
    this.current = block;
    let start: object;
    if (kind === 'tool') {
      this.byCall.set(call, block);
      start = { type: 'tool_use', id: toAnthropicToolId(id), name, input: {} };
    } else {
      start = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    }
    return out + sseEvent('content_block_start', JSON.stringify({ type: 'content_block_start', index: block.index, content_block: start }));
  }

  private delta(block: OpenBlock, text: string): string {
    if (block.closed) {
      if (!this.warned.has(block.call)) {
        this.warned.add(block.call);
        this.opts.logger.warn('tool-call argument text arrived after its block was closed; it is not sent', {
          requestId: this.opts.requestId,
          index: block.call,
          name: block.name,
        });
      }
      return '';
    }
    let delta: object;
    if (block.kind === 'tool') {
      block.args += text;
      delta = { type: 'input_json_delta', partial_json: text };
    } else {
      block.text += text;
      if (block.kind === 'thinking' && this.opts.omitThinking) return '';
      delta = block.kind === 'text' ? { type: 'text_delta', text } : { type: 'thinking_delta', thinking: text };
    }
    return sseEvent('content_block_delta', JSON.stringify({ type: 'content_block_delta', index: block.index, delta }));
  }

  private close(block: OpenBlock): string {
    if (block.closed) return '';
    block.closed = true;
    if (this.current === block) this.current = null;
    let out = '';
    if (block.kind === 'thinking') {
      block.signature = sealReasoning(block.text);
      const delta = { type: 'content_block_delta', index: block.index, delta: { type: 'signature_delta', signature: block.signature } };
      out = sseEvent('content_block_delta', JSON.stringify(delta));
    }
    return out + sseEvent('content_block_stop', `{"type":"content_block_stop","index":${block.index}}`);
  }
}

function parseInput(args: string): unknown {
  if (args.trim().length === 0) return {};
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}
