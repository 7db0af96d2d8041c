// The chat layer's tool-choice stage: a named tool passes alone, renumbered; parallel calls off
// pass only the first call; dropped calls leave nothing behind.
import { describe, expect, it } from 'vitest';
import { ToolCallFilter } from '../../../src/runtime/tool-call-filter.js';
import type { ToolCallEvent } from '../../../src/tool-calls/types.js';

const start = (index: number, name: string, id = `call_${index}`): ToolCallEvent => ({ type: 'tool_call_start', index, id, name });
const args = (index: number, delta: string): ToolCallEvent => ({ type: 'tool_call_arguments', index, delta });
const end = (index: number): ToolCallEvent => ({ type: 'tool_call_end', index });
const content = (text: string): ToolCallEvent => ({ type: 'content', text });

describe('ToolCallFilter', () => {
  it('passes only the named tool, renumbered, and drops the rest entirely', () => {
    const f = new ToolCallFilter({ only: 'bash' });
    const out = [content('a'), start(0, 'read'), args(0, '{"p":1}'), end(0), start(1, 'bash'), args(1, '{}'), end(1), content('b')]
      .map((e) => f.push(e))
      .filter((e) => e !== null);
    expect(out).toEqual([content('a'), { ...start(1, 'bash'), index: 0 }, args(0, '{}'), end(0), content('b')]);
    expect(f.passedIds).toEqual(['call_1']);
  });

  it('with parallel calls off, passes only the first call', () => {
    const f = new ToolCallFilter({ single: true });
    const out = [start(0, 'a'), args(0, '{}'), end(0), start(1, 'b'), args(1, '{}'), end(1)].map((e) => f.push(e)).filter((e) => e !== null);
    expect(out).toEqual([start(0, 'a'), args(0, '{}'), end(0)]);
    expect(f.passedIds).toEqual(['call_0']);
  });

  it('with parallel calls off, gives the slot to the call after one the streamer abandoned', () => {
    const f = new ToolCallFilter({ single: true });
    // Call 0 started, then its text stopped being a valid call: no end; the final plan sends call 1.
    const out = [start(0, 'a'), args(0, '{"x": '), start(1, 'a'), args(1, '{"x": "True"}'), end(1), start(2, 'b'), end(2)]
      .map((e) => f.push(e)).filter((e) => e !== null);
    expect(out).toEqual([start(0, 'a'), args(0, '{"x": '), { ...start(1, 'a'), index: 1 }, { ...args(1, '{"x": "True"}'), index: 1 }, { ...end(1), index: 1 }]);
    expect(f.passedIds).toEqual(['call_0', 'call_1']);
  });

  it('is the identity without a named tool or single', () => {
    expect(ToolCallFilter.isIdentity({})).toBe(true);
    expect(ToolCallFilter.isIdentity({ only: 'a' })).toBe(false);
    expect(ToolCallFilter.isIdentity({ single: true })).toBe(false);
  });
});
