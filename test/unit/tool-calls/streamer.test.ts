import { describe, expect, it } from 'vitest';
import { IncrementalToolCallStreamer, MAX_CALLS, MAX_HELD_CHARS, promptEndsInReasoning } from '../../../src/tool-calls/index.js';
import { reconcileWithFinal } from '../../../src/tool-calls/reconcile-with-final.js';
import { StreamedState, streamedCall } from '../../../src/tool-calls/streamed-state.js';
import type { ToolCallEvent, ToolCallFormat } from '../../../src/tool-calls/types.js';
import { assemble, checkRun, codePoints, counterIds, streamChunks, TOOLS } from './harness.js';

/** Feeds one code point at a time; returns the batches and, for each, the text pushed so far. */
function perCodePoint(text: string, format: ToolCallFormat, startsInReasoning?: boolean) {
  const s = new IncrementalToolCallStreamer({ format, tools: TOOLS, mintId: counterIds(), startsInReasoning });
  const batches: ToolCallEvent[][] = [];
  const pushedUpTo: number[] = [];
  let at = 0;
  for (const cp of codePoints(text)) {
    batches.push(s.push(cp));
    at += cp.length;
    pushedUpTo.push(at);
  }
  batches.push(s.finish());
  pushedUpTo.push(text.length);
  return { batches, pushedUpTo };
}

/** How much text had been pushed when the first event matching `pred` came out. */
function firstAt(run: ReturnType<typeof perCodePoint>, pred: (e: ToolCallEvent) => boolean): number {
  const k = run.batches.findIndex((b) => b.some(pred));
  return k < 0 ? Infinity : run.pushedUpTo[k]!;
}

describe('live streaming (one code point at a time)', () => {
  const live: [ToolCallFormat, string, string, string][] = [
    // format, text, the arguments' closing text, the call's closing marker
    ['hermes', 'Hi <tool_call>{"name": "search", "arguments": {"q": "cats and dogs"}}</tool_call>', '}}', '</tool_call>'],
    ['mistral', '[TOOL_CALLS]search[ARGS]{"q": "cats and dogs"}', '"}', '"}'],
    ['mistral', '[TOOL_CALLS][{"name": "search", "arguments": {"q": "cats and dogs"}}]', '}}', ']'],
    ['llama3_json', '{"name": "search", "parameters": {"q": "cats and dogs"}}', '}}', '}}'],
    ['qwen3_coder', '<tool_call>\n<function=search>\n<parameter=q>\ncats and dogs\n</parameter>\n</function>\n</tool_call>', '</parameter>', '</tool_call>'],
  ];
  for (const [format, text, argsClose, close] of live) {
    it(`${format}: the start, then argument text, arrive before the closers are pushed`, () => {
      const run = perCodePoint(text, format);
      const start = firstAt(run, (e) => e.type === 'tool_call_start');
      const args = firstAt(run, (e) => e.type === 'tool_call_arguments' && e.delta.includes('c'));
      const closeAt = text.lastIndexOf(close) + close.length;
      const argsCloseAt = text.indexOf(argsClose) + argsClose.length;
      expect(start).toBeLessThan(closeAt);
      expect(args).toBeLessThan(argsCloseAt);
      // The value streams as it is written: "cats and dogs" arrives piece by piece.
      const before = run.batches.filter((b, k) => run.pushedUpTo[k]! < text.indexOf('dogs') + 4);
      const pieces = before.flat().filter((e) => e.type === 'tool_call_arguments' && /[a-z]/.test(e.delta));
      expect(pieces.length).toBeGreaterThan(5);
      expect(assemble(run.batches).calls).toHaveLength(1);
    });
  }

  it('content goes out at once, holding back only what could become a marker', () => {
    const run = perCodePoint('abc <tool and more', 'hermes');
    const content = run.batches.map((b) => b.map((e) => (e.type === 'content' ? e.text : '')).join(''));
    expect(content.slice(0, 4)).toEqual(['a', 'b', 'c', ' ']);
    expect(content.slice(4, 9)).toEqual(['', '', '', '', '']); // "<tool" is held
    expect(content[9]).toBe('<tool ');
    expect(assemble(run.batches).content).toBe('abc <tool and more');
  });

  it('reasoning streams live too', () => {
    const run = perCodePoint('<think>abc</think>ok', 'hermes');
    expect(firstAt(run, (e) => e.type === 'reasoning' && e.text === 'a')).toBe('<think>a'.length);
    expect(assemble(run.batches)).toEqual({ content: 'ok', reasoning: 'abc', calls: [] });
  });
});

describe('qwen3_coder object and array values stream while they are JSON', () => {
  const call = (param: string): string => `<tool_call>\n<function=test_types>\n${param}</function>\n</tool_call>`;
  const layouts: [string, (k: string, v: string) => string][] = [
    ['on its own lines', (k, v) => `<parameter=${k}>\n${v}\n</parameter>\n`],
    ['right after the >', (k, v) => `<parameter=${k}>${v}</parameter>\n`],
  ];
  const values: [string, string][] = [
    ['obj_param', '{"query": "cats and dogs", "limit": 10}'],
    ['arr', '["cats and dogs", [10]]'],
  ];

  /** Fed one code point at a time: the run, and the argument text the client had after each push. */
  function perPoint(text: string) {
    const chunks = codePoints(text);
    const run = streamChunks(chunks, { format: 'qwen3_coder' });
    checkRun(run, chunks, true);
    let pushed = 0;
    let args = '';
    const after = run.batches.map((b, k) => {
      pushed += k < chunks.length ? chunks[k]!.length : 0;
      for (const e of b) if (e.type === 'tool_call_arguments' && e.index === 0) args += e.delta;
      return { pushed, args };
    });
    return { run, after };
  }

  for (const [layout, param] of layouts) {
    for (const [name, value] of values) {
      it(`${name} ${layout}: the value goes out as it is written; its closing bracket waits for the value's end`, () => {
        const text = call(param(name, value));
        const { run, after } = perPoint(text);
        const valueEnd = text.indexOf(value) + value.length;
        const paramEnd = text.indexOf('</parameter>', valueEnd) + '</parameter>'.length;
        // When the last character of the value is pushed, all of it but that bracket is out.
        expect(after.find((a) => a.pushed === valueEnd)!.args).toBe(`{"${name}":${value.slice(0, -1)}`);
        // ... piece by piece: "cats and dogs" arrives in several fragments.
        const dogsEnd = text.indexOf('dogs') + 4;
        const pieces = run.batches.filter((_, k) => after[k]!.pushed <= dogsEnd).flat();
        expect(pieces.filter((e) => e.type === 'tool_call_arguments' && /[a-z]/.test(e.delta)).length).toBeGreaterThan(5);
        // The bracket goes out only once `</parameter>` is known to end the value.
        const whole = after.find((a) => a.args === `{"${name}":${value}`)!;
        expect(whole.pushed).toBeGreaterThan(paramEnd);
        expect(run.received.calls).toEqual([{ id: 'call_1', name: 'test_types', arguments: `{"${name}":${value}}` }]);
      });
    }
  }

  it('a Python literal sends nothing of its value before it ends, and arrives as the final parse types it', () => {
    for (const [layout, param] of layouts) {
      for (const [name, value, typed] of [
        ['obj_param', "{'q': 'cats', 'n': 1}", `"{'q': 'cats', 'n': 1}"`],
        ['arr', '[True, False]', '"[True, False]"'],
      ] as const) {
        const text = call(param(name, value));
        const { run, after } = perPoint(text);
        const paramAt = text.indexOf('</parameter>');
        expect(after.filter((a) => a.pushed <= paramAt).at(-1)!.args, layout).toBe(`{"${name}":`);
        expect(run.batches.flat().filter((e) => e.type === 'tool_call_start')).toHaveLength(1);
        expect(run.received.calls.map((c) => c.arguments)).toEqual([`{"${name}":${typed}}`]);
      }
    }
  });

  it('a value that stops being JSON after it began: the streamed call gets no end, the parsed call follows whole', () => {
    const text = `Hi ${call('<parameter=obj_param>\n{"a": 1, "b": None}\n</parameter>\n<parameter=arr>\n[1]\n</parameter>\n')} bye`;
    const { run } = perPoint(text);
    const events = run.batches.flat();
    expect(events.filter((e) => e.type === 'tool_call_start')).toEqual([
      { type: 'tool_call_start', index: 0, id: 'call_1', name: 'test_types' },
      { type: 'tool_call_start', index: 1, id: 'call_2', name: 'test_types' },
    ]);
    const sent0 = events.filter((e) => e.type === 'tool_call_arguments' && e.index === 0).map((e) => (e as { delta: string }).delta);
    expect(sent0.join('')).toBe('{"obj_param":{"a": 1, "b": ');
    expect(events.some((e) => e.type === 'tool_call_end' && e.index === 0)).toBe(false);
    // Nothing more streams after the `N`; finish sends the parsed call and the rest of the content.
    const at = text.indexOf('None');
    expect(run.batches.slice(at + 1, -1).every((b) => b.length === 0)).toBe(true);
    expect(run.batches.at(-1)).toEqual([
      { type: 'content', text: ' bye' },
      { type: 'tool_call_start', index: 1, id: 'call_2', name: 'test_types' },
      { type: 'tool_call_arguments', index: 1, delta: '{"obj_param":"{\\"a\\": 1, \\"b\\": None}","arr":[1]}' },
      { type: 'tool_call_end', index: 1 },
    ]);
    expect(run.received).toEqual({
      content: 'Hi  bye',
      reasoning: '',
      calls: [{ id: 'call_2', name: 'test_types', arguments: '{"obj_param":"{\\"a\\": 1, \\"b\\": None}","arr":[1]}' }],
    });
    expect(run.logs).toEqual([]);
  });

  it('a JSON value longer than the held-text cap streams through without being held', () => {
    const item = '"0123456789abcdef", ';
    const n = Math.ceil(MAX_HELD_CHARS / item.length) + 10;
    const chunks = ['<tool_call>\n<function=test_types>\n<parameter=arr>\n[', ...Array.from({ length: n }, () => item), '"end"]', '\n</parameter>\n</function>\n</tool_call>'];
    const run = streamChunks(chunks, { format: 'qwen3_coder' });
    checkRun(run, chunks, true);
    expect(run.received.calls[0]!.arguments).toBe(`{"arr":[${item.repeat(n)}"end"]}`);
    const sentWhileWriting = run.batches.slice(0, n + 1).flat().filter((e) => e.type === 'tool_call_arguments');
    expect(sentWhileWriting.reduce((sum, e) => sum + (e as { delta: string }).delta.length, 0)).toBeGreaterThan(MAX_HELD_CHARS);
  });

  it('a throw while a JSON value streams is contained, and the client still gets the parsed call', () => {
    const text = call('<parameter=obj_param>\n{"a": [1, 2], "b": "c"}\n</parameter>\n');
    const chunks = codePoints(text);
    for (let k = text.indexOf('{"a"'); k < text.indexOf('</function>'); k += 2) {
      let n = 0;
      const run = streamChunks(chunks, {
        format: 'qwen3_coder',
        faultInjector: (stage) => {
          if (stage === 'push' && n++ === k) throw new Error('injected');
        },
      });
      checkRun(run, chunks, false);
      expect(run.received.calls.map((c) => c.arguments)).toEqual(['{"obj_param":{"a": [1, 2], "b": "c"}}']);
      expect(run.logs.filter((l) => l.level === 'error')).toHaveLength(1);
    }
  });
});

describe('holding back the closing brace', () => {
  it('sends the last character of the arguments together with tool_call_end', () => {
    const text = '<tool_call>{"name": "search", "arguments": {"q": "a"}}\n</tool_call>';
    const run = perCodePoint(text, 'hermes');
    let args = '';
    let ended = false;
    for (const batch of run.batches) {
      for (const e of batch) {
        if (e.type === 'tool_call_arguments') args += e.delta;
        if (e.type === 'tool_call_end') {
          expect(args).toBe('{"q": "a"}');
          ended = true;
        }
      }
      if (!ended) expect(args.endsWith('}')).toBe(false);
    }
    expect(ended).toBe(true);
  });

  it('a call that turns out invalid never shows complete-looking arguments', () => {
    const text = '<tool_call>{"name": "search", "arguments": {"q": "a"}} trailing junk</tool_call> after';
    for (const chunks of [codePoints(text), [text]]) {
      const run = streamChunks(chunks, { format: 'hermes' });
      checkRun(run, chunks, true);
      const args = run.batches.flat().filter((e) => e.type === 'tool_call_arguments').map((e) => (e as { delta: string }).delta).join('');
      expect(() => JSON.parse(args || 'x')).toThrow();
    }
  });
});

describe('a call that turns out invalid after it started', () => {
  const text = 'Before <tool_call>{"name": "search", "arguments": {"q": "abc", oops}}</tool_call> middle <tool_call>{"name": "search", "arguments": {"q": "ok"}}</tool_call> end';

  it('gets nothing more and no end; finish() sends its span as content; later calls still stream', () => {
    const run = perCodePoint(text, 'hermes');
    const events = run.batches.flat();
    const starts = events.filter((e) => e.type === 'tool_call_start');
    expect(starts.map((e) => (e as { index: number }).index)).toEqual([0, 1]);
    expect(events.some((e) => e.type === 'tool_call_end' && e.index === 0)).toBe(false);
    const bad = events.filter((e) => e.type === 'tool_call_arguments' && e.index === 0).map((e) => (e as { delta: string }).delta).join('');
    expect(bad).toBe('{"q": "abc", ');
    // The second call started and ended while streaming, before finish().
    const lastPush = run.batches.slice(0, -1).flat();
    expect(lastPush.some((e) => e.type === 'tool_call_end' && e.index === 1)).toBe(true);
    // The span, and the content after it, arrive at finish.
    const finish = run.batches[run.batches.length - 1]!;
    expect(finish).toContainEqual({
      type: 'content',
      text: '<tool_call>{"name": "search", "arguments": {"q": "abc", oops}}</tool_call> middle  end',
    });
    const got = assemble(run.batches);
    expect(got.content).toBe(
      'Before <tool_call>{"name": "search", "arguments": {"q": "abc", oops}}</tool_call> middle  end',
    );
    expect(got.calls.map((c) => c.arguments)).toEqual(['{"q": "ok"}']);
  });

  it('qwen3_coder: a call cut off inside a value', () => {
    const t = '<tool_call>\n<function=search>\n<parameter=q>\nhalf a val';
    const run = perCodePoint(t, 'qwen3_coder');
    const events = run.batches.flat();
    expect(events.filter((e) => e.type === 'tool_call_start')).toHaveLength(1);
    expect(events.some((e) => e.type === 'tool_call_end')).toBe(false);
    expect(assemble(run.batches)).toEqual({ content: t, reasoning: '', calls: [] });
  });
});

describe('finish()', () => {
  it('closes a confirmed call that had no closing marker, after its last argument fragment', () => {
    const run = perCodePoint('<tool_call>{"name": "search", "arguments": {"q": "a"}}', 'hermes');
    const finish = run.batches[run.batches.length - 1]!;
    expect(finish).toEqual([
      { type: 'tool_call_arguments', index: 0, delta: '}' },
      { type: 'tool_call_end', index: 0 },
    ]);
  });

  it('ends each call as soon as it is complete, before later calls are generated', () => {
    const first = '<tool_call>{"name": "search", "arguments": {"q": "1"}}</tool_call>';
    const s = new IncrementalToolCallStreamer({ format: 'hermes', tools: TOOLS });
    const a = s.push(first);
    expect(a.at(-1)).toEqual({ type: 'tool_call_end', index: 0 });
    s.push('<tool_call>{"name": "search", "arguments": {"q": "2"}}</tool_call>');
    expect(s.finish()).toEqual([]);
  });

  it('is idempotent; pushes after it are ignored; result is what the client got', () => {
    const s = new IncrementalToolCallStreamer({ format: 'mistral', tools: TOOLS });
    expect(s.result).toBeNull();
    s.push('Hi [TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{"q": "x"}');
    s.finish();
    expect(s.finish()).toEqual([]);
    expect(s.push('more')).toEqual([]);
    expect(s.result).toEqual({ content: 'Hi ', reasoning: '', calls: [{ id: 'abc123XYZ', name: 'search', arguments: '{"q": "x"}' }] });
  });
});

describe('ids', () => {
  it('a Mistral id written before the arguments is the streamed id; the final parse agrees', () => {
    const text = '[TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{"q": "x"}[TOOL_CALLS][{"id": "Zz9Yy8Xx7", "name": "search", "arguments": {}}]';
    const run = streamChunks(codePoints(text), { format: 'mistral' });
    checkRun(run, codePoints(text), true);
    expect(run.received.calls.map((c) => c.id)).toEqual(['abc123XYZ', 'Zz9Yy8Xx7']);
    expect(run.final.calls.map((c) => c.id)).toEqual(['abc123XYZ', 'Zz9Yy8Xx7']);
  });

  it('the id is fixed when the call starts', () => {
    const run = perCodePoint('<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>', 'hermes');
    const starts = run.batches.flat().filter((e) => e.type === 'tool_call_start');
    expect(starts).toEqual([{ type: 'tool_call_start', index: 0, id: 'call_1', name: 'search' }]);
  });
});

describe('isolation', () => {
  const text =
    'Intro <think>plan</think><tool_call>{"name": "search", "arguments": {"q": "first"}}</tool_call> mid ' +
    '<tool_call>{"name": "write_file", "arguments": {"path": "a", "content": "b"}}</tool_call> outro';

  it('a throw in any push is contained and the client still gets the complete result', () => {
    const chunks = codePoints(text);
    for (let k = 0; k < chunks.length; k += 3) {
      let n = 0;
      const run = streamChunks(chunks, {
        format: 'hermes',
        faultInjector: (stage) => {
          if (stage === 'push' && n++ === k) throw new Error('injected');
        },
      });
      checkRun(run, chunks, false);
      expect(run.received.calls.map((c) => c.name)).toEqual(['search', 'write_file']);
      expect(run.logs.filter((l) => l.level === 'error')).toHaveLength(1);
      expect(run.logs[0]!.fields).toMatchObject({ requestId: 'req-test' });
      // After the fault nothing streams until finish.
      expect(run.batches.slice(k + 1, -1).every((b) => b.length === 0)).toBe(true);
    }
  });

  it('a throw at finish is contained too', () => {
    const chunks = codePoints('<tool_call>{"name": "search", "arguments": {"q": "a"}}');
    const run = streamChunks(chunks, {
      format: 'hermes',
      faultInjector: (stage) => {
        if (stage === 'finish') throw new Error('injected');
      },
    });
    checkRun(run, chunks, false);
    expect(run.received.calls).toHaveLength(1);
  });

  it('the rolled-back call keeps only what was sent, and finish sends the unsent rest', () => {
    const chunks = ['<tool_call>{"name": "search", "arguments": {"q": "ab', 'cd"}}</tool_call>'];
    const run = streamChunks(chunks, {
      format: 'hermes',
      faultInjector: (stage, t) => {
        if (stage === 'push' && t.startsWith('cd')) throw new Error('injected');
      },
    });
    expect(run.batches[1]).toEqual([]);
    expect(run.batches[2]).toEqual([
      { type: 'tool_call_arguments', index: 0, delta: 'cd"}' },
      { type: 'tool_call_end', index: 0 },
    ]);
  });
});

describe('caps', () => {
  function capped(chunks: string[], format: ToolCallFormat) {
    const run = streamChunks(chunks, { format });
    checkRun(run, chunks, false);
    expect(run.logs.some((l) => l.level === 'warn' && /cap/.test(l.msg))).toBe(true);
    return run;
  }

  it('a name longer than 256 bytes', () => {
    const long = 'n'.repeat(300);
    const run = capped(codePoints(`<tool_call>{"name": "${long}", "arguments": {}}</tool_call>`), 'hermes');
    expect(run.received.calls).toEqual([]);
  });

  it('a qwen3_coder header longer than 256 bytes', () => {
    capped(codePoints(`<tool_call>\n<function=search>\n<parameter=${'p'.repeat(300)}>\nx\n</parameter>\n</function>\n</tool_call>`), 'qwen3_coder');
  });

  it('a Mistral id longer than 128 bytes', () => {
    const run = capped([`[TOOL_CALLS]search[CALL_ID]${'i'.repeat(200)}`, '[ARGS]{}'], 'mistral');
    expect(run.received.calls).toHaveLength(1);
  });

  it('more than 1 MiB held while the name is unknown', () => {
    const big = 'x'.repeat(MAX_HELD_CHARS + 10);
    const run = capped(['<tool_call>{"arguments": {"q": "', big, '"}, "name": "search"}</tool_call>'], 'hermes');
    expect(run.received.calls[0]!.arguments.length).toBe(big.length + 9);
  });

  it('a typed qwen3_coder value over 1 MiB', () => {
    const big = '1'.repeat(MAX_HELD_CHARS + 10);
    capped(['<tool_call>\n<function=calculate_area>\n<parameter=precision>\n', big, '\n</parameter>\n</function>\n</tool_call>'], 'qwen3_coder');
  });

  it('more than 1024 calls', () => {
    const one = '[TOOL_CALLS]search[ARGS]{"q": 1}';
    const run = capped(Array.from({ length: MAX_CALLS + 5 }, () => one), 'mistral');
    expect(run.received.calls).toHaveLength(MAX_CALLS + 5);
  });

  it('more than 1024 parameters', () => {
    const params = Array.from({ length: 1030 }, (_, i) => `<parameter=p${i}>\nv\n</parameter>\n`);
    capped(['<tool_call>\n<function=search>\n', ...params, '</function>\n</tool_call>'], 'qwen3_coder');
  });
});

describe('reasoning that began in the prompt', () => {
  it('told, the streamer agrees with the final parse', () => {
    const chunks = codePoints('hmm</think>answer');
    const run = streamChunks(chunks, { format: 'hermes', startsInReasoning: true });
    checkRun(run, chunks, true);
    expect(run.received).toMatchObject({ reasoning: 'hmm', content: 'answer' });
  });

  it('not told, it warns and still delivers the answer and the reasoning', () => {
    const chunks = codePoints('hmm</think>answer');
    const run = streamChunks(chunks, { format: 'hermes' });
    expect(run.logs.some((l) => /startsInReasoning/.test(l.msg))).toBe(true);
    const events = run.batches.flat();
    const content = events.filter((e) => e.type === 'content').map((e) => (e as { text: string }).text).join('');
    expect(content).toBe('hmmanswer');
    expect(assemble(run.batches).reasoning).toBe('hmm');
  });

  it('promptEndsInReasoning', () => {
    expect(promptEndsInReasoning('<|im_start|>assistant\n<think>\n')).toBe(true);
    expect(promptEndsInReasoning('<think>\n\n</think>\n\n')).toBe(false);
    expect(promptEndsInReasoning('<|im_start|>assistant\n')).toBe(false);
  });
});

describe('surrogate pairs', () => {
  it('a pair split across pushes is never split in the output', () => {
    const text = 'a😀b<tool_call>{"name": "search", "arguments": {"q": "😀"}}</tool_call>😀';
    const units = text.split('');
    const run = streamChunks(units, { format: 'hermes' });
    checkRun(run, units, true);
    const q = streamChunks(text.split(''), { format: 'qwen3_coder' });
    checkRun(q, units, true);
  });

  it('qwen3_coder escapes a pair split across pushes as one character', () => {
    const text = '<tool_call>\n<function=search>\n<parameter=q>\n😀\n</parameter>\n</function>\n</tool_call>';
    const run = streamChunks(text.split(''), { format: 'qwen3_coder' });
    expect(run.received.calls[0]!.arguments).toBe('{"q":"😀"}');
  });
});

describe('reconciliation', () => {
  const ctx = (warnings: string[]) => ({ format: 'hermes' as const, mintId: counterIds(), warn: (m: string) => void warnings.push(m) });

  it('a match gets only the unsent rest and its end', () => {
    const state = new StreamedState();
    state.calls.push(streamedCall(0, 'call_a', 'search', '{"q": '));
    state.nextIndex = 1;
    const out: ToolCallEvent[] = [];
    const warnings: string[] = [];
    reconcileWithFinal(state, { content: '', reasoning: '', calls: [{ id: 'x', name: 'search', arguments: '{"q": 1}' }] }, out, ctx(warnings));
    expect(out).toEqual([
      { type: 'tool_call_arguments', index: 0, delta: '1}' },
      { type: 'tool_call_end', index: 0 },
    ]);
    expect(warnings).toEqual([]);
  });

  it('a different name or arguments that are not a prefix: warn, nothing more for it, one-shot under a fresh index', () => {
    for (const [name, args] of [
      ['write_file', '{"q": '],
      ['search', '{"z": '],
    ] as const) {
      const state = new StreamedState();
      state.calls.push(streamedCall(0, 'call_a', name, args));
      state.nextIndex = 1;
      const out: ToolCallEvent[] = [];
      const warnings: string[] = [];
      reconcileWithFinal(state, { content: '', reasoning: '', calls: [{ id: 'call_a', name: 'search', arguments: '{"q": 1}' }] }, out, ctx(warnings));
      expect(warnings).toHaveLength(1);
      expect(out).toEqual([
        { type: 'tool_call_start', index: 1, id: 'call_1', name: 'search' },
        { type: 'tool_call_arguments', index: 1, delta: '{"q": 1}' },
        { type: 'tool_call_end', index: 1 },
      ]);
    }
  });

  it('a streamed call missing from the final parse is reported', () => {
    const state = new StreamedState();
    state.calls.push(streamedCall(0, 'call_a', 'search', '{'));
    const warnings: string[] = [];
    reconcileWithFinal(state, { content: '', reasoning: '', calls: [] }, [], ctx(warnings));
    expect(warnings).toHaveLength(1);
  });
});

describe('hostile input', () => {
  it('ignores non-string pushes and survives missing tools', () => {
    const s = new IncrementalToolCallStreamer({ format: 'hermes', tools: undefined as never });
    expect(s.push(undefined as never)).toEqual([]);
    expect(s.push(42 as never)).toEqual([]);
    s.push('<tool_call>{"name": "search", "arguments": {}}</tool_call>');
    s.finish();
    expect(s.result!.calls).toEqual([]);
  });

  it('rejects an unknown format when constructed, with a typed error', () => {
    expect(() => new IncrementalToolCallStreamer({ format: 'xml' as never, tools: [] })).toThrow(/unknown tool-call format/);
  });

  it('control characters, lone surrogates and NULs pass through as content', () => {
    const text = 'a\u0000b\ud800c\udc00\u001f<tool_call>\u0000</tool_call>';
    for (const chunks of [[text], text.split('')]) {
      const run = streamChunks(chunks, { format: 'hermes' });
      checkRun(run, chunks, true);
      expect(run.received.content).toBe(text);
    }
  });
});
