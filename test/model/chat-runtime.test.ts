// runtime.chat(), chatStream() and explainCache() on a tiny Qwen3-vocabulary model with the Qwen3
// template: streamed events agree with the result, cancellation frees the slot, tool options,
// replay persisted across runtimes, typed errors.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InvalidArgumentError, NoChatTemplateError, Runtime, type ChatMessage, type ChatResult, type ChatStreamEvent, type OpenAITool,
} from '../../src/index.js';
import { sharedTemplate, writeTinyChatModel } from '../fixtures/chat/tiny-chat-model.js';

const TOOLS: OpenAITool[] = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
];
const USER: ChatMessage[] = [{ role: 'user', content: 'Weather in Paris and Rome?' }];
const TWO_CALLS = '<think>\nTwo cities.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>';

let model: string;
let rt: Runtime;
const script = (text: string) => rt.tokenize(text, { addBos: false, parseSpecial: true });

beforeAll(async () => {
  model = writeTinyChatModel('qwen3', sharedTemplate('qwen3.jinja'));
  rt = await Runtime.load({ model, threads: 1, contextSize: 2048 });
});
afterAll(() => rt?.close());

describe('chatStream', () => {
  it('streams events that add up to the result, with done last', async () => {
    const events: ChatStreamEvent[] = [];
    for await (const e of rt.chatStream({ messages: USER, tools: TOOLS, forcedTokens: script(TWO_CALLS), maxTokens: 200 })) events.push(e);
    const done = events.at(-1)!;
    expect(done.type).toBe('done');
    if (done.type !== 'done') return;
    const { message, finishReason, usage } = done.result;
    expect(events[0]).toEqual({ type: 'start', promptTokens: usage.promptTokens, cachedTokens: usage.cachedTokens });
    expect(events.filter((e) => e.type === 'start')).toHaveLength(1);
    expect(finishReason).toBe('tool_calls');
    expect(message.reasoning).toBe('\nTwo cities.\n');
    expect(events.filter((e) => e.type === 'reasoning').map((e) => (e as { text: string }).text).join('')).toBe(message.reasoning);
    expect(events.filter((e) => e.type === 'content').map((e) => (e as { text: string }).text).join('')).toBe(message.content);
    expect(message.toolCalls!.map((c) => c.function.arguments)).toEqual(['{"city": "Paris"}', '{"city": "Rome"}']);
    message.toolCalls!.forEach((c, index) => {
      const start = events.find((e) => e.type === 'tool_call_start' && e.index === index) as { id: string; name: string };
      expect(start).toMatchObject({ id: c.id, name: 'get_weather' });
      const args = events.filter((e) => e.type === 'tool_call_arguments' && e.index === index).map((e) => (e as { delta: string }).delta).join('');
      expect(args).toBe(c.function.arguments);
      expect(events.some((e) => e.type === 'tool_call_end' && e.index === index)).toBe(true);
    });
    expect(usage.completionTokens).toBe(script(TWO_CALLS).length - 1);
  });

  it('with no tools, streams each token\'s text as one content event; Qwen3\'s opening thinking is reasoning', async () => {
    const ids = script(TWO_CALLS);
    const decoder = rt.tokenizer.createDecoder();
    const pieces = ids.slice(0, -1).map((id) => decoder.push(id)).filter((p) => p !== '');
    const events: ChatStreamEvent[] = [];
    for await (const e of rt.chatStream({ messages: USER, forcedTokens: ids, maxTokens: 200 })) events.push(e);
    const thinkEnd = pieces.indexOf('</think>');
    expect(events.filter((e) => e.type === 'content').map((e) => (e as { text: string }).text)).toEqual(pieces.slice(thinkEnd + 1));
    expect(events.filter((e) => e.type === 'reasoning').map((e) => (e as { text: string }).text)).toEqual(pieces.slice(1, thinkEnd));
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error('no done event');
    expect(done.result.message).toEqual({ role: 'assistant', content: pieces.slice(thinkEnd + 1).join(''), reasoning: '\nTwo cities.\n' });
    expect(done.result.finishReason).toBe('stop');
  });

  it('cancels the generation when the consumer stops early, and the slot is free again', async () => {
    let n = 0;
    for await (const e of rt.chatStream({ messages: USER, maxTokens: 500, temperature: 0 })) {
      if (e.type === 'content' || e.type === 'reasoning') n++;
      if (n >= 2) break;
    }
    const r = await rt.chat({ messages: USER, maxTokens: 3, temperature: 0 });
    expect(r.usage.completionTokens).toBeLessThanOrEqual(3);
  });
});

describe('chat', () => {
  it('ends with abort when the signal fires', async () => {
    const ctrl = new AbortController();
    let seen = 0;
    const stream = rt.chatStream({ messages: USER, maxTokens: 500, temperature: 0, signal: ctrl.signal });
    let result;
    for await (const e of stream) {
      if (e.type !== 'done' && ++seen === 3) ctrl.abort();
      if (e.type === 'done') result = e.result;
    }
    expect(result!.finishReason).toBe('abort');
    expect(result!.usage.completionTokens).toBeLessThan(500);
  });

  it('reports each generated token\'s logprob before its text, only when asked', async () => {
    const events: ChatStreamEvent[] = [];
    for await (const e of rt.chatStream({ messages: USER, tools: TOOLS, forcedTokens: script(TWO_CALLS), maxTokens: 200, logprobs: 2 })) events.push(e);
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error('no done event');
    const entries = events.flatMap((e) => (e.type === 'logprob' ? [e.logprob] : []));
    expect(entries).toEqual(done.result.logprobs);
    expect(entries.map((e) => e.id)).toEqual(script(TWO_CALLS).slice(0, -1));
    expect(entries.every((e) => e.top.length === 2 && e.logprob <= e.top[0]!.logprob)).toBe(true);
    // The first text event comes after the first token's entry.
    expect(events.findIndex((e) => e.type === 'logprob')).toBeLessThan(events.findIndex((e) => e.type === 'reasoning'));
    const plain = await rt.chat({ messages: USER, forcedTokens: script(TWO_CALLS), maxTokens: 5 });
    expect(plain.logprobs).toBeUndefined();
  });

  it('names the stop string that ended the reply', async () => {
    const r = await rt.chat({ messages: USER, tools: TOOLS, stop: ['Rome', 'Paris'], forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(r.stopSequence).toBe('Paris');
    expect(r.finishReason).toBe('stop');
    const plain = await rt.chat({ messages: USER, forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(plain.stopSequence).toBeNull();
  });

  it('parallelToolCalls: false stops once the first call is complete', async () => {
    const r = await rt.chat({ messages: USER, tools: TOOLS, parallelToolCalls: false, forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(r.finishReason).toBe('tool_calls');
    expect(r.message.toolCalls).toHaveLength(1);
    expect(r.usage.completionTokens).toBeLessThan(script(TWO_CALLS).length - 1);
  });

  it("toolChoice 'none' hides the tools; a named function lets only its calls through", async () => {
    const none = await rt.chat({ messages: USER, tools: TOOLS, toolChoice: 'none', forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(none.message.toolCalls).toBeUndefined();
    expect(none.message.content).toContain('<tool_call>');
    expect(none.finishReason).toBe('stop');
    expect(rt.explainCache(USER, { tools: TOOLS, toolChoice: 'none' }).promptTokens).toBe(rt.explainCache(USER).promptTokens);
    // The prompt declares every tool whatever the choice, so it stays the same prompt.
    const search = { type: 'function' as const, function: { name: 'search' } };
    expect(rt.explainCache(USER, { tools: TOOLS, toolChoice: search }).promptTokens).toBe(rt.explainCache(USER, { tools: TOOLS }).promptTokens);

    // Calls to another tool are never streamed and leave nothing in the reply.
    const events: ChatStreamEvent[] = [];
    for await (const e of rt.chatStream({ messages: USER, tools: TOOLS, toolChoice: search, forcedTokens: script(TWO_CALLS), maxTokens: 200 })) events.push(e);
    expect(events.some((e) => e.type.startsWith('tool_call'))).toBe(false);
    const dropped = (events.at(-1) as { result: ChatResult }).result;
    expect(dropped.message.toolCalls).toBeUndefined();
    expect(dropped.message.content).not.toContain('get_weather');
    expect(dropped.finishReason).toBe('stop');

    const weather = { type: 'function' as const, function: { name: 'get_weather' } };
    const both = await rt.chat({ messages: USER, tools: TOOLS, toolChoice: weather, forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(both.message.toolCalls!.map((c) => c.function.arguments)).toEqual(['{"city": "Paris"}', '{"city": "Rome"}']);
    const first = await rt.chat({ messages: USER, tools: TOOLS, toolChoice: weather, parallelToolCalls: false, forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    expect(first.message.toolCalls!.map((c) => c.function.arguments)).toEqual(['{"city": "Paris"}']);
    expect(first.finishReason).toBe('tool_calls');
    await expect(rt.chat({ messages: USER, tools: TOOLS, toolChoice: { type: 'function', function: { name: 'nope' } } })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('reports where a prompt leaves the cache, and logs it at debug level', async () => {
    const lines: string[] = [];
    const logged = await Runtime.load({ model, threads: 1, contextSize: 2048, logger: { debug: (m) => lines.push(m), warn() {}, error() {} } });
    try {
      await logged.chat({ messages: USER, maxTokens: 2, temperature: 0 });
      const edited: ChatMessage[] = [{ role: 'user', content: 'Weather in Paris and Oslo?' }];
      const why = logged.explainCache(edited);
      expect(why.divergence).toMatchObject({ messageIndex: 0, role: 'user' });
      expect(why.divergence!.context).toContain('Oslo');
      await logged.chat({ messages: edited, maxTokens: 1, temperature: 0 });
      expect(lines.at(-1)).toMatch(/first difference at token \d+, in message 0 \(user\)/);
    } finally {
      await logged.close();
    }
  });

  it('rejects bad requests with typed errors', async () => {
    await expect(rt.chat({ messages: [] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.chat({ messages: USER, maxTokens: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.chat({ messages: USER, stop: [''] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.chat({ messages: USER, tools: [{ type: 'function', function: { name: '' } }] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(rt.chat({ messages: USER, tools: [TOOLS[0]!, TOOLS[0]!] })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('templates and formats', () => {
  it('needs a chat template, and a tool-call format to take tools', async () => {
    const bare = await Runtime.load({ model: writeTinyChatModel('qwen3', null), threads: 1, contextSize: 256 });
    try {
      await expect(bare.chat({ messages: USER })).rejects.toBeInstanceOf(NoChatTemplateError);
    } finally {
      await bare.close();
    }
    const zephyr = await Runtime.load({ model, threads: 1, contextSize: 512, chatTemplate: sharedTemplate('tinyllama.jinja') });
    try {
      const r = await zephyr.chat({ messages: USER, maxTokens: 2, temperature: 0 });
      expect(r.usage.promptTokens).toBe(zephyr.tokenize('<|user|>\nWeather in Paris and Rome?</s>\n<|assistant|>\n', { addBos: false }).length);
      await expect(zephyr.chat({ messages: USER, tools: TOOLS })).rejects.toBeInstanceOf(InvalidArgumentError);
    } finally {
      await zephyr.close();
    }
  });
});

describe('replay cache file', () => {
  it('replays a turn recorded by an earlier runtime', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kiln-replay-')), 'replay.jsonl');
    const first = await Runtime.load({ model, threads: 1, contextSize: 2048, replay: { file } });
    let reply;
    try {
      reply = await first.chat({ messages: USER, tools: TOOLS, forcedTokens: script(TWO_CALLS), maxTokens: 200 });
    } finally {
      await first.close();
    }
    const calls = reply.message.toolCalls!;
    const next: ChatMessage[] = [
      ...USER,
      { role: 'assistant', content: '', tool_calls: calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.stringify(JSON.parse(c.function.arguments as string)) } })) },
      ...calls.map((c): ChatMessage => ({ role: 'tool', tool_call_id: c.id, content: 'sunny' })),
    ];
    const second = await Runtime.load({ model, threads: 1, contextSize: 2048, replay: { file } });
    const cold = await Runtime.load({ model, threads: 1, contextSize: 2048 });
    try {
      const why = second.explainCache(next, { tools: TOOLS });
      expect(why.replayed).toEqual([1]);
      expect(cold.explainCache(next, { tools: TOOLS }).replayed).toEqual([]);
      // The replayed prompt holds the recorded thinking and the model's own tokens, so it differs.
      expect(why.promptTokens).not.toBe(cold.explainCache(next, { tools: TOOLS }).promptTokens);
    } finally {
      await second.close();
      await cold.close();
    }
  });
});
