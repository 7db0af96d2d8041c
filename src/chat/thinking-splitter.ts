// The text stage of a chat with no tools in play: generated text goes straight through, one content
// event per piece, as the detokenizer emits it. Only thinking is told apart, and only where that
// holds back no answer text: a reply that starts inside `<think>` (the prompt left it open, or the
// reply's first piece opens it) is reasoning up to `</think>`, and everything after is content.
// Inside reasoning, a tail that could still become `</think>` waits for the next piece; nothing
// else ever waits. A `<think>` anywhere later is content, as the model wrote it.
import type { ParsedToolCalls, ToolCallEvent } from '../tool-calls/types.js';

const OPEN = '<think>';
const CLOSE = '</think>';

export interface ThinkingSplitterOptions {
  /** The prompt left a `<think>` open: the reply begins as reasoning. */
  startsInReasoning: boolean;
  /** A reply whose first piece begins with `<think>` is reasoning (templates of thinking models). */
  opensReasoning: boolean;
}

export class ThinkingSplitter {
  private mode: 'start' | 'reasoning' | 'content';
  private held = '';
  private content = '';
  private reasoning = '';
  private finished = false;

  constructor(private readonly opts: ThinkingSplitterOptions) {
    this.mode = opts.startsInReasoning ? 'reasoning' : opts.opensReasoning ? 'start' : 'content';
  }

  push(text: string): ToolCallEvent[] {
    if (this.finished || text.length === 0) return [];
    if (this.mode === 'content') {
      this.content += text;
      return [{ type: 'content', text }];
    }
    if (this.mode === 'start') {
      if (!text.startsWith(OPEN)) {
        this.mode = 'content';
        return this.push(text);
      }
      this.mode = 'reasoning';
      text = text.slice(OPEN.length);
    }
    return this.think(text);
  }

  finish(): ToolCallEvent[] {
    if (this.finished) return [];
    this.finished = true;
    const rest = this.held;
    this.held = '';
    if (rest === '') return [];
    this.reasoning += rest;
    return [{ type: 'reasoning', text: rest }];
  }

  /** The reply as sent: content and reasoning (markers removed), never calls. */
  get result(): ParsedToolCalls {
    return { content: this.content, reasoning: this.reasoning, calls: [] };
  }

  private think(text: string): ToolCallEvent[] {
    const buffer = this.held + text;
    const out: ToolCallEvent[] = [];
    const close = buffer.indexOf(CLOSE);
    if (close >= 0) {
      this.held = '';
      this.mode = 'content';
      if (close > 0) {
        this.reasoning += buffer.slice(0, close);
        out.push({ type: 'reasoning', text: buffer.slice(0, close) });
      }
      const after = buffer.slice(close + CLOSE.length);
      if (after !== '') {
        this.content += after;
        out.push({ type: 'content', text: after });
      }
      return out;
    }
    const keep = heldFrom(buffer);
    this.held = buffer.slice(keep);
    if (keep > 0) {
      this.reasoning += buffer.slice(0, keep);
      out.push({ type: 'reasoning', text: buffer.slice(0, keep) });
    }
    return out;
  }
}

/** Where the longest tail of `s` that is a proper start of `</think>` begins (s.length if none). */
function heldFrom(s: string): number {
  for (let from = Math.max(0, s.length - CLOSE.length + 1); from < s.length; from++) {
    if (CLOSE.startsWith(s.slice(from))) return from;
  }
  return s.length;
}
