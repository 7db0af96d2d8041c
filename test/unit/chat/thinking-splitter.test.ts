// The no-tools text stage: pieces pass through one for one; only a reply that starts inside
// thinking is split, and only a possible `</think>` inside reasoning ever waits.
import { describe, expect, it } from 'vitest';
import { ThinkingSplitter, type ThinkingSplitterOptions } from '../../../src/chat/thinking-splitter.js';
import type { ToolCallEvent } from '../../../src/tool-calls/types.js';

function run(opts: ThinkingSplitterOptions, pieces: string[]): { perPush: ToolCallEvent[][]; tail: ToolCallEvent[]; s: ThinkingSplitter } {
  const s = new ThinkingSplitter(opts);
  const perPush = pieces.map((p) => s.push(p));
  return { perPush, tail: s.finish(), s };
}

const PLAIN = { startsInReasoning: false, opensReasoning: false };
const THINKS = { startsInReasoning: false, opensReasoning: true };

describe('ThinkingSplitter', () => {
  it('passes every piece through as one content event when the template does not think', () => {
    const pieces = ['<think>', 'a', '</think>', ' <tool_call>', '<', '/think'];
    const { perPush, tail, s } = run(PLAIN, pieces);
    expect(perPush).toEqual(pieces.map((text) => [{ type: 'content', text }]));
    expect(tail).toEqual([]);
    expect(s.result).toEqual({ content: pieces.join(''), reasoning: '', calls: [] });
  });

  it('splits a reply that opens with <think>, and never holds back content', () => {
    const { perPush, tail, s } = run(THINKS, ['<think>', '\nhm', 'm.\n<', '/th', 'ink>\n\n', 'Hi', ' <think> there']);
    expect(perPush).toEqual([
      [],
      [{ type: 'reasoning', text: '\nhm' }],
      [{ type: 'reasoning', text: 'm.\n' }],
      [],
      [{ type: 'content', text: '\n\n' }],
      [{ type: 'content', text: 'Hi' }],
      [{ type: 'content', text: ' <think> there' }],
    ]);
    expect(tail).toEqual([]);
    expect(s.result).toEqual({ content: '\n\nHi <think> there', reasoning: '\nhmm.\n', calls: [] });
  });

  it('takes the reply as content when its first piece does not open thinking', () => {
    const { perPush, s } = run(THINKS, [' ', '<think>', 'x']);
    expect(perPush.flat().every((e) => e.type === 'content')).toBe(true);
    expect(s.result.reasoning).toBe('');
  });

  it('starts in reasoning when the prompt left <think> open; a held tail that never closes is reasoning', () => {
    const { perPush, tail, s } = run({ startsInReasoning: true, opensReasoning: true }, ['plan</think>', 'answer']);
    expect(perPush).toEqual([[{ type: 'reasoning', text: 'plan' }], [{ type: 'content', text: 'answer' }]]);
    expect(tail).toEqual([]);
    expect(s.result).toEqual({ content: 'answer', reasoning: 'plan', calls: [] });

    const open = run({ startsInReasoning: true, opensReasoning: false }, ['still thinking </thi']);
    expect(open.perPush).toEqual([[{ type: 'reasoning', text: 'still thinking ' }]]);
    expect(open.tail).toEqual([{ type: 'reasoning', text: '</thi' }]);
    expect(open.s.result.reasoning).toBe('still thinking </thi');
  });
});
