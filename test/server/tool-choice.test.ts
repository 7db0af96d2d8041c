// tool_choice "required" (Anthropic "any") and named choices are enforced: the reply opens with a
// call even when the model would rather answer in plain text. A scripted model (real tokenizer,
// template, sampler, streamer and server; see scripted-model.ts) prefers plain text, so only the
// constraint can make it call; the real tiny models show the forced opening going through the
// forward pass and KV cache of runtime.chat().
import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolChoiceConstraint } from '../../src/chat/tool-choice-constraint.js';
import type { ChatOptions } from '../../src/runtime/chat.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { ServedRuntime } from '../../src/server/server-context.js';
import { MODELS, SHARED } from '../helpers/paths.js';
import { type Running, parseSse, postJson, startServer } from './helpers.js';
import { type ScriptedModel, scriptedModel } from './scripted-model.js';

const QWEN = `${MODELS}/tiny-qwen3-q8_0.gguf`;
const M = 'tiny-qwen3';
const template = (name: string) => readFileSync(`${SHARED}/templates/${name}`, 'utf8');
const tool = (name: string, param: string) => ({
  type: 'function' as const,
  function: { name, description: `${name} tool`, parameters: { type: 'object', properties: { [param]: { type: 'string' } }, required: [param] } },
});
const TOOLS = [tool('get_weather', 'city'), tool('search', 'query')];
const ANTHROPIC_TOOLS = TOOLS.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters as Anthropic.Tool.InputSchema }));
const ASK = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

const PLAIN = 'It is sunny in Paris.';
const WEATHER_ARGS = '{"city": "Paris"}';
const SEARCH_ARGS = '{"query": "Paris weather"}';
const WEATHER = `<tool_call>\n{"name": "get_weather", "arguments": ${WEATHER_ARGS}}\n</tool_call>`;
const SEARCH = `<tool_call>\n{"name": "search", "arguments": ${SEARCH_ARGS}}\n</tool_call>`;
/** A model that would rather answer in plain text; its calls, when it has to make one, in the order it prefers them. */
const PREFERS_TEXT = [PLAIN, WEATHER, SEARCH];
const NAMED_SEARCH = { type: 'function' as const, function: { name: 'search' } };

/** Turns the constraint off for the length of `fn`: what the reply would be without enforcement. */
async function unenforced<T>(fn: () => Promise<T>): Promise<T> {
  const proto = ToolChoiceConstraint.prototype;
  const allowed = proto.allowed;
  proto.allowed = () => null;
  try {
    return await fn();
  } finally {
    proto.allowed = allowed;
  }
}

describe('runtime chat: enforced tool choice (scripted model that prefers text, qwen3 template)', () => {
  let rt: Runtime;
  let model: ScriptedModel;
  beforeAll(async () => {
    rt = await Runtime.load({ model: QWEN, threads: 1, contextSize: 4096 });
    model = scriptedModel(rt, { chatTemplate: template('qwen3.jinja') });
  });
  afterAll(async () => rt?.close());

  const chat = (o: Partial<ChatOptions>) => model.chats.chat({ messages: ASK, tools: TOOLS, temperature: 0, maxTokens: 200, ...o });

  it('auto: the model answers in plain text', async () => {
    model.say(...PREFERS_TEXT);
    const r = await chat({});
    expect(r.message).toEqual({ role: 'assistant', content: PLAIN });
    expect(r.finishReason).toBe('stop');
  });

  it("'required': the reply is a call, to the tool the model prefers among the declared ones", async () => {
    model.say(...PREFERS_TEXT);
    const r = await chat({ toolChoice: 'required' });
    expect(r.finishReason).toBe('tool_calls');
    expect(r.message.content).toBe('');
    expect(r.message.toolCalls?.map((c) => [c.function.name, c.function.arguments])).toEqual([['get_weather', WEATHER_ARGS]]);
  });

  it('named: the reply is a call to that tool, whichever the model prefers', async () => {
    model.say(...PREFERS_TEXT);
    const r = await chat({ toolChoice: NAMED_SEARCH });
    expect(r.finishReason).toBe('tool_calls');
    expect(r.message.toolCalls?.map((c) => [c.function.name, c.function.arguments])).toEqual([['search', SEARCH_ARGS]]);
  });

  it('a name the model would invent is not allowed: only declared tools can be called', async () => {
    model.say(PLAIN, `<tool_call>\n{"name": "lookup_weather", "arguments": {}}\n</tool_call>`, SEARCH);
    const r = await chat({ toolChoice: 'required' });
    expect(r.message.toolCalls?.map((c) => c.function.name)).toEqual(['search']);
  });

  it('thinking comes first: the call is forced once the model closes </think>', async () => {
    const think = '<think>\nThe user wants the weather.\n</think>\n\n';
    model.say(`${think}${PLAIN}`, `${think}${WEATHER}`);
    const r = await chat({ toolChoice: 'required' });
    expect(r.message.reasoning).toBe('\nThe user wants the weather.\n');
    expect(r.message.toolCalls?.map((c) => c.function.name)).toEqual(['get_weather']);
    expect(r.finishReason).toBe('tool_calls');
  });

  it('streams: no part of the call as content, the call as events', async () => {
    model.say(...PREFERS_TEXT);
    const types: string[] = [];
    for await (const e of model.chats.stream({ messages: ASK, tools: TOOLS, toolChoice: 'required', temperature: 0, maxTokens: 200 })) {
      if (e.type === 'content') expect(e.text.trim()).toBe('');
      types.push(e.type);
    }
    expect(types).toContain('tool_call_start');
    expect(types).toContain('tool_call_end');
  });

  it('turns red without the constraint: the same requests answer in plain text', async () => {
    model.say(...PREFERS_TEXT);
    const required = await unenforced(() => chat({ toolChoice: 'required' }));
    const named = await unenforced(() => chat({ toolChoice: NAMED_SEARCH }));
    expect(required.message.toolCalls).toBeUndefined();
    expect(named.message.toolCalls).toBeUndefined();
    expect(required.finishReason).toBe('stop');
  });

  it('the forced call is replayed exactly: the next turn reuses the whole cached reply', async () => {
    const replaying = scriptedModel(rt, { chatTemplate: template('qwen3.jinja'), replay: {} });
    // Compact arguments: the template would re-render them spaced, so only replay keeps the cache.
    replaying.say(PLAIN, WEATHER.replace(WEATHER_ARGS, '{"city":"Paris"}'));
    const first = await replaying.chats.chat({ messages: ASK, tools: TOOLS, toolChoice: 'required', temperature: 0, maxTokens: 200 });
    expect(first.message.toolCalls).toHaveLength(1);
    const call = first.message.toolCalls![0]!;
    const next = await replaying.chats.chat({
      messages: [...ASK, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      tools: TOOLS, temperature: 0, maxTokens: 200,
    });
    expect(next.message.content).toBe(PLAIN);
    expect(next.usage.cachedTokens).toBeGreaterThanOrEqual(first.usage.promptTokens + first.usage.completionTokens);
  });

  it("rejects 'required' with no tools", async () => {
    await expect(model.chats.chat({ messages: ASK, toolChoice: 'required' })).rejects.toThrow(/required/);
  });
});

describe('qwen3_coder: enforced tool choice (scripted model, qwen3-coder template)', () => {
  let rt: Runtime;
  let model: ScriptedModel;
  beforeAll(async () => {
    rt = await Runtime.load({ model: QWEN, threads: 1, contextSize: 4096 });
    model = scriptedModel(rt, { chatTemplate: template('qwen3-coder.jinja') });
  });
  afterAll(async () => rt?.close());

  it('named: forces <tool_call><function=NAME> and the model writes the parameters', async () => {
    const bash = '<tool_call>\n<function=bash>\n<parameter=command>\nls -la ~/tmp/\n</parameter>\n</function>\n</tool_call>';
    model.say('Sure, run ls.', bash);
    const tools = [tool('bash', 'command'), tool('read_file', 'path')];
    const r = await model.chats.chat({ messages: ASK, tools, toolChoice: { type: 'function', function: { name: 'bash' } }, temperature: 0, maxTokens: 200 });
    expect(r.message.toolCalls?.map((c) => [c.function.name, c.function.arguments])).toEqual([['bash', '{"command":"ls -la ~/tmp/"}']]);
    const plain = await model.chats.chat({ messages: ASK, tools, temperature: 0, maxTokens: 200 });
    expect(plain.message.content).toBe('Sure, run ls.');
  });
});

describe('server: enforced tool choice on every endpoint (scripted model that prefers text)', () => {
  let s: Running;
  let model: ScriptedModel;
  beforeAll(async () => {
    s = await startServer({ model: QWEN, contextSize: 4096 }, { modelId: M }, (rt) => {
      model = scriptedModel(rt as Runtime, { chatTemplate: template('qwen3.jinja') });
      return Object.create(rt, { chatStream: { value: (o: ChatOptions) => model.chats.stream(o) } }) as ServedRuntime;
    });
  });
  afterAll(async () => s?.close());

  async function streamChat(body: object): Promise<{ content: string; calls: string[]; args: string; finish: string | null }> {
    const res = await postJson(`${s.url}/v1/chat/completions`, { model: M, messages: ASK, tools: TOOLS, stream: true, temperature: 0, ...body });
    expect(res.status).toBe(200);
    const out = { content: '', calls: [] as string[], args: '', finish: null as string | null };
    for (const e of parseSse(await res.text())) {
      if (e.data === '[DONE]') continue;
      const choice = JSON.parse(e.data).choices[0];
      if (choice.finish_reason) out.finish = choice.finish_reason;
      if (typeof choice.delta.content === 'string') out.content += choice.delta.content;
      for (const tc of choice.delta.tool_calls ?? []) {
        if (tc.function.name !== undefined) out.calls.push(tc.function.name);
        out.args += tc.function.arguments;
      }
    }
    return out;
  }

  it('chat completions, streamed: required and named give tool_calls, never content; auto gives text', async () => {
    model.say(...PREFERS_TEXT);
    expect(await streamChat({})).toEqual({ content: PLAIN, calls: [], args: '', finish: 'stop' });
    expect(await streamChat({ tool_choice: 'required' })).toEqual({ content: '', calls: ['get_weather'], args: WEATHER_ARGS, finish: 'tool_calls' });
    expect(await streamChat({ tool_choice: NAMED_SEARCH })).toEqual({ content: '', calls: ['search'], args: SEARCH_ARGS, finish: 'tool_calls' });
  });

  it('chat completions through the openai client, not streamed', async () => {
    model.say(...PREFERS_TEXT);
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({ model: M, messages: ASK, tools: TOOLS, tool_choice: 'required', temperature: 0 });
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    expect(r.choices[0]!.message.content).toBeNull();
    expect(r.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function)).toEqual([{ name: 'get_weather', arguments: WEATHER_ARGS }]);
  });

  it('responses: required and named give a function_call item', async () => {
    model.say(...PREFERS_TEXT);
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const tools = TOOLS.map((t) => ({ type: 'function' as const, name: t.function.name, parameters: t.function.parameters, strict: false }));
    const base = { model: M, input: ASK[0]!.content, tools, temperature: 0 };
    const auto = await client.responses.create(base);
    expect(auto.output.map((i) => i.type)).toEqual(['message']);
    const required = await client.responses.create({ ...base, tool_choice: 'required', stream: true });
    let done: OpenAI.Responses.Response | undefined;
    for await (const ev of required) if (ev.type === 'response.completed') done = ev.response;
    expect(done!.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: WEATHER_ARGS, status: 'completed' })]);
    const named = await client.responses.create({ ...base, tool_choice: { type: 'function', name: 'search' } });
    expect(named.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'search', arguments: SEARCH_ARGS })]);
  });

  it('anthropic messages: tool_choice any and tool give tool_use, stop_reason tool_use', async () => {
    model.say(...PREFERS_TEXT);
    const client = new Anthropic({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 });
    const base = { model: M, max_tokens: 200, messages: ASK, tools: ANTHROPIC_TOOLS, temperature: 0 };
    const auto = await client.messages.create(base);
    expect(auto.content).toEqual([{ type: 'text', text: PLAIN }]);
    const any = await client.messages.stream({ ...base, tool_choice: { type: 'any' } }).finalMessage();
    expect(any.stop_reason).toBe('tool_use');
    expect(any.content.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type))).toEqual([['get_weather', { city: 'Paris' }]]);
    const named = await client.messages.create({ ...base, tool_choice: { type: 'tool', name: 'search' } });
    expect(named.stop_reason).toBe('tool_use');
    expect(named.content.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type))).toEqual([['search', { query: 'Paris weather' }]]);
  });

  it('turns red without the constraint: required streams plain text and finishes stop', async () => {
    model.say(...PREFERS_TEXT);
    const r = await unenforced(() => streamChat({ tool_choice: 'required' }));
    expect(r).toEqual({ content: PLAIN, calls: [], args: '', finish: 'stop' });
  });
});

describe('real tiny models: the forced opening runs through runtime.chat()', () => {
  const cases = [
    { model: 'tiny-qwen2-f16.gguf', template: 'qwen2.5.jinja', opening: (name: string) => `<tool_call>\n{"name": "${name}", "arguments": ` },
    { model: 'tiny-qwen3-q8_0.gguf', template: 'qwen3-coder.jinja', opening: (name: string) => `<tool_call>\n<function=${name}>\n` },
    { model: 'tiny-llama-q8_0.gguf', template: 'llama3.1.jinja', opening: (name: string) => ` {"name": "${name}", "parameters": ` },
  ];
  for (const c of cases) {
    it(`${c.model}, ${c.template}: the generated tokens open with the call, whose name streams`, async () => {
      const rt = await Runtime.load({ model: `${MODELS}/${c.model}`, chatTemplate: template(c.template), threads: 1, contextSize: 2048 });
      try {
        const opts = { messages: ASK, tools: TOOLS, temperature: 0, maxTokens: 48, logprobs: 0 };
        const auto = await rt.chat(opts);
        const text = (r: typeof auto) => rt.detokenize(r.logprobs!.map((e) => e.id));
        expect(text(auto)).not.toContain('get_weather');
        const named = await rt.chat({ ...opts, toolChoice: NAMED_SEARCH });
        expect(text(named).startsWith(c.opening('search').trimStart())).toBe(true);
        let started: string | undefined;
        for await (const e of rt.chatStream({ ...opts, toolChoice: 'required' })) if (e.type === 'tool_call_start') started ??= e.name;
        expect(TOOLS.map((t) => t.function.name)).toContain(started);
      } finally {
        await rt.close();
      }
    });
  }
});
