// The chat endpoints on the real stories260K model (with the TinyLlama chat template, since the
// GGUF has none): /v1/chat/completions, /v1/responses and /v1/messages through the official
// clients, streamed and not, agree with runtime.chat() called directly.
import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatOptions } from '../../src/runtime/chat.js';
import type { ServedRuntime } from '../../src/server/server-context.js';
import { SHARED } from '../helpers/paths.js';
import { type Running, parseSse, postJson, startServer } from './helpers.js';

const TEMPLATE = readFileSync(`${SHARED}/templates/tinyllama.jinja`, 'utf8');
const M = 'stories260K';
const ASK = 'Tell me a story about a cat.';

let s: Running;
let openai: OpenAI;
let anthropic: Anthropic;
let expected: string;

beforeAll(async () => {
  s = await startServer({ chatTemplate: TEMPLATE, slots: 2 });
  openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 });
  const direct = await s.runtime.chat({ messages: [{ role: 'user', content: ASK }], maxTokens: 40, temperature: 0 });
  expected = direct.message.content;
});
afterAll(async () => s?.close());

describe('/v1/chat/completions on stories260K', () => {
  it('gives runtime.chat()\'s text, streamed and not, through the openai client', async () => {
    const r = await openai.chat.completions.create({ model: M, messages: [{ role: 'user', content: ASK }], max_tokens: 40, temperature: 0 });
    expect(expected.length).toBeGreaterThan(0);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: expected });
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.object).toBe('chat.completion');
    expect(r.usage!.completion_tokens).toBe(40);
    expect(r.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThan(0);

    const stream = await openai.chat.completions.create({
      model: M, messages: [{ role: 'user', content: ASK }], max_tokens: 40, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (c?.delta.content) text += c.delta.content;
      if (c?.finish_reason) finish = c.finish_reason;
    }
    expect(text).toBe(expected);
    expect(finish).toBe('length');
    expect(chunks).toBeGreaterThan(20);
    expect(usage).toMatchObject({ completion_tokens: 40 });
  });

  it('reports logprobs in OpenAI\'s shape, streamed and not, for every generated token', async () => {
    const body = { model: M, messages: [{ role: 'user' as const, content: ASK }], max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2 };
    const r = await openai.chat.completions.create(body);
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(r.usage!.completion_tokens);
    expect(content.map((e) => e.token).join('')).toBe(r.choices[0]!.message.content);
    for (const e of content) {
      expect(Buffer.from(e.bytes!).toString('utf8')).toBe(e.token);
      expect(e.top_logprobs).toHaveLength(2);
      expect(e.top_logprobs[0]).toEqual({ token: e.token, logprob: e.logprob, bytes: e.bytes });
      expect(e.top_logprobs[1]!.logprob).toBeLessThanOrEqual(e.logprob);
    }
    const stream = await openai.chat.completions.create({ ...body, stream: true });
    const streamed: OpenAI.ChatCompletionTokenLogprob[] = [];
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    expect(streamed).toEqual(content);

    const plain = await openai.chat.completions.create({ ...body, logprobs: false, top_logprobs: undefined });
    expect(plain.choices[0]!.logprobs).toBeNull();
  });

  it('ignores unknown fields', async () => {
    const res = await postJson(`${s.url}/v1/chat/completions`, {
      model: M, messages: [{ role: 'user', content: ASK, extra: 1 }], max_tokens: 3, store: true, metadata: { a: 'b' }, service_tier: 'auto', future_option: { x: [1] },
    });
    expect(res.status).toBe(200);
  });

  it('refuses a conversation longer than the context with both numbers', async () => {
    const res = await postJson(`${s.url}/v1/chat/completions`, { model: M, messages: [{ role: 'user', content: 'Once upon a time '.repeat(200) }] });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe('context_length_exceeded');
    expect(body.error.message).toMatch(/\d+ tokens but the context holds 512/);
  });
});

describe('/v1/responses on stories260K', () => {
  it('gives the same text, streamed and not, and continues from a stored response', async () => {
    const r = await openai.responses.create({ model: M, input: ASK, max_output_tokens: 40, temperature: 0 });
    expect(r.output_text).toBe(expected);
    expect(r.status).toBe('incomplete');
    expect(r.output.map((i) => i.type)).toEqual(['message']);
    expect(r.id).toMatch(/^resp_/);

    const stream = await openai.responses.create({ model: M, input: ASK, max_output_tokens: 40, temperature: 0, stream: true });
    let text = '';
    const types: string[] = [];
    let final: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.incomplete' || ev.type === 'response.completed') final = ev.response;
    }
    expect(text).toBe(expected);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.at(-1)).toBe('response.incomplete');
    expect(final!.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: expected }] });

    expect(await openai.responses.retrieve(r.id)).toEqual(r);
    const next = await openai.responses.create({ model: M, input: 'And then?', previous_response_id: r.id, max_output_tokens: 10, temperature: 0 });
    expect(next.previous_response_id).toBe(r.id);
    // The first turn's prompt and reply are the start of the second prompt: served from the cache.
    expect(next.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(r.usage!.input_tokens);
  });
});

/** The params with temperature 0, which the pinned SDK's types no longer list but the API (and kiln) take. */
function greedy(params: Anthropic.MessageCreateParamsNonStreaming): Anthropic.MessageCreateParamsNonStreaming {
  return { ...params, temperature: 0 } as Anthropic.MessageCreateParamsNonStreaming;
}

describe('/v1/messages on stories260K', () => {
  it('gives the same text, streamed and not, through the Anthropic client', async () => {
    const r = await anthropic.messages.create(greedy({ model: M, max_tokens: 40, messages: [{ role: 'user', content: ASK }] }));
    expect(r.content).toEqual([{ type: 'text', text: expected }]);
    expect(r.stop_reason).toBe('max_tokens');
    expect(r.usage.output_tokens).toBe(40);

    const events: string[] = [];
    const stream = anthropic.messages.stream({ model: M, max_tokens: 40, temperature: 0, messages: [{ role: 'user', content: ASK }] });
    stream.on('streamEvent', (e) => void events.push(e.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: expected }]);
    expect(final.stop_reason).toBe('max_tokens');
    expect(events[0]).toBe('message_start');
    expect(events.at(-1)).toBe('message_stop');
    expect(events.filter((e) => e === 'content_block_delta').length).toBeGreaterThan(20);
  });

  it('opens the stream with the real prompt usage, and names the stop sequence that ended the reply', async () => {
    const stop = expected.slice(12, 16);
    const cut = expected.slice(0, expected.indexOf(stop));
    const body = { model: M, max_tokens: 40, temperature: 0, messages: [{ role: 'user' as const, content: ASK }], stop_sequences: ['never here', stop] };
    const r = await anthropic.messages.create(body);
    expect(r).toMatchObject({ content: [{ type: 'text', text: cut }], stop_reason: 'stop_sequence', stop_sequence: stop });

    let opened: Anthropic.Message | undefined;
    const stream = anthropic.messages.stream(body);
    stream.on('streamEvent', (e) => { if (e.type === 'message_start') opened = e.message; });
    const final = await stream.finalMessage();
    expect(final).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: stop });
    // The same prompt again: message_start already says how much of it came from the cache.
    expect(opened!.usage.input_tokens + opened!.usage.cache_read_input_tokens!).toBe(r.usage.input_tokens + r.usage.cache_read_input_tokens!);
    expect(opened!.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(opened!.usage.input_tokens).toBe(final.usage.input_tokens);
  });

  it('takes a system prompt and a conversation with blocks', async () => {
    const r = await anthropic.messages.create(greedy({
      model: M, max_tokens: 8, system: [{ type: 'text', text: 'You tell stories.' }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'Hello!' }] },
        { role: 'user', content: ASK },
      ],
    }));
    expect(r.content[0]!.type).toBe('text');
  });
});

describe('tools off is the plain token stream', () => {
  // Without tools in play the chat layer passes generated text straight through: making it hold
  // back possible markers, or parse `<think>` in a template that has no thinking, turns this red.
  it('sends each token\'s text as it is generated, markers and all, with no tools or tool_choice none', async () => {
    let forced: number[] = [];
    const t = await startServer({ chatTemplate: TEMPLATE }, {}, (rt) =>
      Object.create(rt, { chatStream: { value: (o: ChatOptions) => rt.chatStream({ ...o, forcedTokens: forced }) } }) as ServedRuntime);
    try {
      const text = 'Tom said <tool_call> and <think> to the cat. The end.';
      const ids = t.runtime.tokenize(text, { addBos: false });
      forced = ids;
      const pieces: string[] = [];
      const decoder = t.runtime.tokenizer.createDecoder();
      for (const id of ids) pieces.push(decoder.push(id));
      for (const extra of [{}, { tools: [{ type: 'function', function: { name: 'bash' } }], tool_choice: 'none' }]) {
        const res = await postJson(`${t.url}/v1/chat/completions`, { model: M, messages: [{ role: 'user', content: ASK }], max_tokens: ids.length, stream: true, ...extra });
        const deltas = parseSse(await res.text())
          .filter((e) => e.data !== '[DONE]')
          .map((e) => JSON.parse(e.data).choices[0]?.delta?.content)
          .filter((c) => typeof c === 'string' && c !== '');
        expect(deltas).toEqual(pieces.filter((p) => p !== ''));
      }
    } finally {
      await t.close();
    }
  });
});

describe('chat disconnect', () => {
  it('a client that leaves a chat stream cancels its generation and frees the slot', async () => {
    const finishes: string[] = [];
    const t = await startServer({ chatTemplate: TEMPLATE, slots: 1, contextSize: 8192 }, {}, (rt) =>
      Object.create(rt, {
        chatStream: {
          value: async function* (o: ChatOptions) {
            for await (const e of rt.chatStream(o)) {
              if (e.type === 'done') finishes.push(e.result.finishReason);
              yield e;
            }
          },
        },
      }) as ServedRuntime);
    try {
      const res = await postJson(`${t.url}/v1/messages`, { model: M, max_tokens: 100_000, stream: true, messages: [{ role: 'user', content: ASK }] });
      const reader = res.body!.getReader();
      for (let i = 0; i < 3; i++) await reader.read();
      await reader.cancel();
      const next = await postJson(`${t.url}/v1/chat/completions`, { model: M, max_tokens: 5, messages: [{ role: 'user', content: ASK }] });
      expect(next.status).toBe(200);
      expect(finishes).toEqual(['abort', 'length']);
    } finally {
      await t.close();
    }
  });
});
