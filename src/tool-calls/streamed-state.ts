// What a client has received from one streamer: the ground truth for rolling back after a fault
// and for reconciling with the final parse.
import { SentText } from './sent-text.js';
import type { ParsedToolCalls, ToolCallEvent } from './types.js';

export interface StreamedCall {
  index: number;
  id: string;
  name: string;
  /** Argument text sent so far. */
  args: SentText;
  /** The complete arguments, once reconciled with the final parse. */
  final: string | null;
  ended: boolean;
  /** Turned out invalid after it started: nothing more is sent for it, and it has no end. */
  abandoned: boolean;
}

export function streamedCall(index: number, id: string, name: string, args = ''): StreamedCall {
  const sent = new SentText();
  if (args.length > 0) sent.push(args);
  return { index, id, name, args: sent, final: null, ended: false, abandoned: false };
}

export class StreamedState {
  readonly content = new SentText();
  readonly reasoning = new SentText();
  readonly calls: StreamedCall[] = [];
  nextIndex = 0;

  /** Appends an event to `out`, merging it into the previous one when they continue each other. */
  static append(out: ToolCallEvent[], ev: ToolCallEvent): void {
    const last = out[out.length - 1];
    if (last !== undefined) {
      if (ev.type === 'content' && last.type === 'content') {
        out[out.length - 1] = { type: 'content', text: last.text + ev.text };
        return;
      }
      if (ev.type === 'reasoning' && last.type === 'reasoning') {
        out[out.length - 1] = { type: 'reasoning', text: last.text + ev.text };
        return;
      }
      if (ev.type === 'tool_call_arguments' && last.type === 'tool_call_arguments' && last.index === ev.index) {
        out[out.length - 1] = { type: 'tool_call_arguments', index: ev.index, delta: last.delta + ev.delta };
        return;
      }
    }
    out.push(ev);
  }

  /**
   * After reconciliation: the reply as the client has it, with the ids it was sent: the final
   * content and reasoning, and the calls that ended, in index order.
   */
  result(final: ParsedToolCalls): ParsedToolCalls {
    const calls = this.calls
      .filter((c) => c.ended && c.final !== null)
      .sort((a, b) => a.index - b.index)
      .map((c) => ({ id: c.id, name: c.name, arguments: c.final! }));
    return { content: final.content, reasoning: final.reasoning, calls };
  }
}
