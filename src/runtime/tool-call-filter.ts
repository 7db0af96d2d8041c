// The chat stage after the tool-call streamer that applies the request's tool choice: with a named
// tool only calls to it reach the reply, and with parallel calls off only the first call does.
// Filtered calls vanish entirely (no content, no index): visible calls are renumbered 0, 1, ... in
// the order they start.
import type { ToolCallEvent } from '../tool-calls/types.js';

export interface ToolCallFilterOptions {
  /** Only calls to this tool pass. */
  only?: string;
  /** Only the first passing call is sent. */
  single?: boolean;
}

export class ToolCallFilter {
  /** Streamer index -> visible index, or -1 for a dropped call. */
  private readonly map = new Map<number, number>();
  private visible = 0;
  /** A passed call not ended yet (streamer index), or -1. */
  private open = -1;
  /** The ids of the calls that passed, in order. */
  readonly passedIds: string[] = [];

  constructor(private readonly opts: ToolCallFilterOptions) {}

  /** True when the filter can change nothing, so callers may skip it. */
  static isIdentity(opts: ToolCallFilterOptions): boolean {
    return opts.only === undefined && !opts.single;
  }

  push(ev: ToolCallEvent): ToolCallEvent | null {
    switch (ev.type) {
      case 'content':
      case 'reasoning':
        return ev;
      case 'tool_call_start': {
        // Calls never overlap: a call starting while a passed one is still open means the streamer
        // abandoned that one (its text turned out not to be a valid call), so it takes the single slot.
        const slotFree = this.visible === 0 || this.open >= 0;
        const pass = (this.opts.only === undefined || ev.name === this.opts.only) && (!this.opts.single || slotFree);
        const index = pass ? this.visible++ : -1;
        this.map.set(ev.index, index);
        if (!pass) return null;
        this.open = ev.index;
        this.passedIds.push(ev.id);
        return { ...ev, index };
      }
      case 'tool_call_end': {
        if (ev.index === this.open) this.open = -1;
        const index = this.map.get(ev.index) ?? -1;
        return index < 0 ? null : { ...ev, index };
      }
      case 'tool_call_arguments': {
        const index = this.map.get(ev.index) ?? -1;
        return index < 0 ? null : { ...ev, index };
      }
    }
  }
}
