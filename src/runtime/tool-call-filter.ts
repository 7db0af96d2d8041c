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
        const pass = (this.opts.only === undefined || ev.name === this.opts.only) && !(this.opts.single && this.visible > 0);
        const index = pass ? this.visible++ : -1;
        this.map.set(ev.index, index);
        if (!pass) return null;
        this.passedIds.push(ev.id);
        return { ...ev, index };
      }
      case 'tool_call_arguments':
      case 'tool_call_end': {
        const index = this.map.get(ev.index) ?? -1;
        return index < 0 ? null : { ...ev, index };
      }
    }
  }
}
