import { describe, expect, it } from 'vitest';
import { parseToolCalls } from '../../../src/tool-calls/index.js';
import { CASES } from './cases.js';
import { counterIds, TOOLS } from './harness.js';

describe('parseToolCalls: table', () => {
  for (const c of CASES) {
    it(`${c.format}: ${c.name}`, () => {
      const r = parseToolCalls(c.text, { format: c.format, tools: TOOLS, startsInReasoning: c.startsInReasoning, mintId: counterIds() });
      expect(r.content).toBe(c.content);
      expect(r.reasoning).toBe(c.reasoning ?? '');
      expect(r.calls.map((x) => [x.name, x.arguments])).toEqual(c.calls);
      for (const call of r.calls) expect(() => JSON.parse(call.arguments)).not.toThrow();
    });
  }
});

describe('parseToolCalls: details', () => {
  it('decides from the text when not told whether the output began inside reasoning', () => {
    const text = 'I should search.</think>Here: <tool_call>{"name": "search", "arguments": {"q": "a"}}</tool_call>';
    const r = parseToolCalls(text, { format: 'hermes', tools: TOOLS });
    expect(r.reasoning).toBe('I should search.');
    expect(r.content).toBe('Here: ');
    expect(r.calls).toHaveLength(1);
    // Told it did not, a stray closer is just text.
    const told = parseToolCalls(text, { format: 'hermes', tools: TOOLS, startsInReasoning: false });
    expect(told.content).toBe('I should search.</think>Here: ');
  });

  it('a </think> inside a call is not a reasoning closer', () => {
    const text = '<tool_call>{"name": "search", "arguments": {"q": "</think>"}}</tool_call>';
    const r = parseToolCalls(text, { format: 'hermes', tools: TOOLS });
    expect(r.reasoning).toBe('');
    expect(r.calls[0]!.arguments).toBe('{"q": "</think>"}');
  });

  it('mints call_ ids, and 9-character ids for mistral', () => {
    const h = parseToolCalls('<tool_call>{"name": "search", "arguments": {}}</tool_call>', { format: 'hermes', tools: TOOLS });
    expect(h.calls[0]!.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    const m = parseToolCalls('[TOOL_CALLS]search[ARGS]{}', { format: 'mistral', tools: TOOLS });
    expect(m.calls[0]!.id).toMatch(/^[A-Za-z0-9]{9}$/);
  });

  it('uses a Mistral id the model wrote before the name, if valid and new', () => {
    const text =
      '[TOOL_CALLS][{"id": "Zz9Yy8Xx7", "name": "search", "arguments": {"q": "a"}}, {"name": "search", "arguments": {"q": "b"}, "id": "Aa1Bb2Cc3"}]' +
      '[TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{}[TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{}[TOOL_CALLS]search[CALL_ID]short[ARGS]{}';
    const r = parseToolCalls(text, { format: 'mistral', tools: TOOLS, mintId: counterIds() });
    expect(r.calls.map((c) => c.id)).toEqual(['Zz9Yy8Xx7', 'id0000001', 'abc123XYZ', 'id0000002', 'id0000003']);
  });

  it('an empty tool list means nothing is a call', () => {
    const text = '<tool_call>{"name": "search", "arguments": {}}</tool_call>';
    expect(parseToolCalls(text, { format: 'hermes', tools: [] })).toEqual({ content: text, reasoning: '', calls: [] });
  });

  it('skips malformed tool declarations', () => {
    const tools = [null, { type: 'function' }, { type: 'function', function: { name: 5 } }, TOOLS[4]] as never[];
    const r = parseToolCalls('<tool_call>{"name": "search", "arguments": {}}</tool_call>', { format: 'hermes', tools });
    expect(r.calls).toHaveLength(1);
  });

  it('rejects an unknown format with a typed error', () => {
    expect(() => parseToolCalls('x', { format: 'pythonic' as never, tools: [] })).toThrow(/unknown tool-call format/);
  });

  it('a million levels of nesting do not recurse', () => {
    const deep = `<tool_call>{"name": "complexTool", "arguments": {"a": ${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}}}</tool_call>`;
    expect(parseToolCalls(deep, { format: 'hermes', tools: TOOLS }).calls).toHaveLength(1);
    const unclosed = `[TOOL_CALLS]complexTool[ARGS]{"a": ${'['.repeat(1_000_000)}`;
    expect(parseToolCalls(unclosed, { format: 'mistral', tools: TOOLS }).content).toBe(unclosed);
  });
});

describe('parseToolCalls: a constant id minter', () => {
  it('does not hang on several Mistral calls', () => {
    const r = parseToolCalls('[TOOL_CALLS]search[ARGS]{}[TOOL_CALLS]search[ARGS]{}[TOOL_CALLS]search[CALL_ID]replay[ARGS]{}', {
      format: 'mistral',
      tools: TOOLS,
      mintId: () => 'replay',
    });
    expect(r.calls).toHaveLength(3);
  });
});

describe('parseToolCalls: keys', () => {
  it('a key written with escapes is the same key; any other key is not a call', () => {
    const ok = parseToolCalls('<tool_call>{"n\\u0061me": "search", "arguments": {}}</tool_call>', { format: 'hermes', tools: TOOLS });
    expect(ok.calls.map((c) => c.name)).toEqual(['search']);
    for (const key of ['"\\\\"', '"name "', '"Name"', '"id"']) {
      const text = `<tool_call>{"name": "search", "arguments": {}, ${key}: 1}</tool_call>`;
      expect(parseToolCalls(text, { format: 'hermes', tools: TOOLS }).content).toBe(text);
    }
  });
});
