// Tool calls through every endpoint with a scripted decoder: the tiny Qwen3 model (real forward
// pass, KV cache, BPE tokenizer, chat template and tool-call streamer) is made to emit a given
// token sequence through the chat layer's forcedTokens hook. The script is tokenized by the model's
// own vocabulary, so the markers arrive split across many tokens, as from a real model.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IncrementalToolCallStreamer } from '../../src/tool-calls/incremental-tool-call-streamer.js';
import { forcedServer, QWEN_ID as M } from './forced-replies.js';
import { parseSse, postJson } from './helpers.js';

const BASH_CALL = '<tool_call>\n<function=bash>\n<parameter=command>\nls -la ~/tmp/\n</parameter>\n</function>\n</tool_call>';
const READ_CALL = '<tool_call>\n<function=read_file>\n<parameter=path>\n/etc/hosts\n</parameter>\n</function>\n</tool_call>';
// The qwen3_coder parser builds the arguments JSON from the typed values in this spacing.
const BASH_ARGS = '{"command":"ls -la ~/tmp/"}';
const tool = (name: string, param: string) => ({
  type: 'function' as const,
  function: { name, description: `${name} tool`, parameters: { type: 'object', properties: { [param]: { type: 'string' } }, required: [param] } },
});
const TOOLS = [tool('bash', 'command'), tool('read_file', 'path')];
const ASK = [{ role: 'user', content: 'List my tmp folder.' }];

/** A server whose chat generations emit the scripted text (then EOS) instead of sampling. */
const scriptedServer = (template: string) => forcedServer(template);

interface ChatStreamSummary {
  content: string[];
  calls: { index: number; id?: string; name?: string; arguments: string[] }[];
  starts: number;
  finish: string | null;
}

async function streamChat(url: string, body: object): Promise<ChatStreamSummary> {
  const res = await postJson(`${url}/v1/chat/completions`, { model: M, messages: ASK, tools: TOOLS, stream: true, ...body });
  expect(res.status).toBe(200);
  const out: ChatStreamSummary = { content: [], calls: [], starts: 0, finish: null };
  for (const e of parseSse(await res.text())) {
    if (e.data === '[DONE]') continue;
    const choice = JSON.parse(e.data).choices[0];
    if (!choice) continue;
    if (choice.finish_reason) out.finish = choice.finish_reason;
    const d = choice.delta;
    if (typeof d.content === 'string' && d.content !== '') out.content.push(d.content);
    for (const tc of d.tool_calls ?? []) {
      let call = out.calls.find((c) => c.index === tc.index);
      if (!call) out.calls.push((call = { index: tc.index, arguments: [] }));
      if (tc.id !== undefined) {
        out.starts++;
        call.id = tc.id;
        call.name = tc.function.name;
        expect(tc.function.arguments).toBe('');
        expect(tc.type).toBe('function');
      } else {
        call.arguments.push(tc.function.arguments);
      }
    }
  }
  return out;
}

/** What the issue demands of the replayed broken-server case; an empty list means it passes. */
function brokenServerProblems(r: ChatStreamSummary): string[] {
  const problems: string[] = [];
  const fragments = ['<tool_call>', '<function', 'bash', '<parameter', 'ls -la', '</'];
  for (const c of r.content) {
    if (fragments.some((f) => c.includes(f)) || BASH_CALL.includes(c.trim()) && c.trim() !== '') problems.push(`content delta carries part of the call: ${JSON.stringify(c)}`);
  }
  if (r.starts !== 1 || r.calls.length !== 1) problems.push(`expected exactly one tool call, got ${r.starts} starts / ${r.calls.length} calls`);
  const call = r.calls[0];
  if (call?.index !== 0 || call?.name !== 'bash') problems.push(`expected tool_calls[0] named bash, got ${JSON.stringify(call)}`);
  if (call?.arguments.join('') !== BASH_ARGS) problems.push(`arguments ${JSON.stringify(call?.arguments.join(''))}`);
  if (r.finish !== 'tool_calls') problems.push(`finish_reason ${r.finish}`);
  return problems;
}

describe('qwen3_coder tool calls (tiny Qwen3, qwen3-coder template)', () => {
  let q: Awaited<ReturnType<typeof scriptedServer>>;
  beforeAll(async () => {
    q = await scriptedServer('qwen3-coder.jinja');
  });
  afterAll(async () => q?.s.close());

  it('replays the broken-server case: the bash call streams as one tool call, never as content', async () => {
    const ids = q.say(BASH_CALL);
    // The markers really are split across tokens.
    expect(ids.length).toBeGreaterThan(20);
    expect(ids.some((id) => q.s.runtime.detokenize([id]).includes('<tool_call>'))).toBe(false);
    const r = await streamChat(q.s.url, {});
    expect(brokenServerProblems(r)).toEqual([]);
    // Arguments stream while the model writes them, not in one piece at the end.
    expect(r.calls[0]!.arguments.length).toBeGreaterThan(1);
  });

  it('turns red when the tool-call streamer is a pass-through', async () => {
    q.say(BASH_CALL);
    const proto = IncrementalToolCallStreamer.prototype;
    const push = proto.push;
    proto.push = (text: string) => [{ type: 'content', text }];
    let r: ChatStreamSummary;
    try {
      r = await streamChat(q.s.url, {});
    } finally {
      proto.push = push;
    }
    const problems = brokenServerProblems(r);
    expect(problems.some((p) => p.startsWith('content delta carries part of the call'))).toBe(true);
    expect(problems).toContain('finish_reason stop');
  });

  it('with tools declared, a plain answer streams token by token and finishes stop', async () => {
    const ids = q.say('Sure, here is the answer.');
    const r = await streamChat(q.s.url, {});
    expect(r.calls).toEqual([]);
    expect(r.content).toEqual(ids.map((id) => q.s.runtime.detokenize([id])));
    expect(r.finish).toBe('stop');
  });

  it('returns the call non-streamed: tool_calls, content without the call, finish tool_calls', async () => {
    q.say(`Let me look.\n${BASH_CALL}`);
    const client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const r = await client.chat.completions.create({ model: M, messages: ASK as OpenAI.ChatCompletionMessageParam[], tools: TOOLS });
    const c = r.choices[0]!;
    expect(c.finish_reason).toBe('tool_calls');
    expect(c.message.content).toBe('Let me look.\n');
    expect(c.message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'bash', arguments: BASH_ARGS } }]);
  });

  it('streams through the openai client and accumulates the same call', async () => {
    q.say(BASH_CALL);
    const client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = client.chat.completions.stream({ model: M, messages: ASK as OpenAI.ChatCompletionMessageParam[], tools: TOOLS });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    expect(final.choices[0]!.message.tool_calls![0]!.function).toEqual({ name: 'bash', arguments: BASH_ARGS });
  });

  it('with a named tool_choice only that tool reaches the client, renumbered, and other calls leave no trace', async () => {
    q.say(`${READ_CALL}\n${BASH_CALL}`);
    const r = await streamChat(q.s.url, { tool_choice: { type: 'function', function: { name: 'bash' } } });
    expect(r.calls.map((c) => [c.index, c.name, c.arguments.join('')])).toEqual([[0, 'bash', BASH_ARGS]]);
    expect(r.content.join('').trim()).toBe('');
    expect(r.finish).toBe('tool_calls');

    q.say(READ_CALL);
    const none = await streamChat(q.s.url, { tool_choice: { type: 'function', function: { name: 'bash' } } });
    expect(none.calls).toEqual([]);
    expect(none.content.join('')).not.toContain('read_file');
    expect(none.finish).toBe('stop');
  });

  it('with parallel_tool_calls false only the first call is sent', async () => {
    q.say(`${BASH_CALL}\n${READ_CALL}`);
    const r = await streamChat(q.s.url, { parallel_tool_calls: false });
    expect(r.calls.map((c) => c.name)).toEqual(['bash']);
    expect(r.finish).toBe('tool_calls');
  });

  it('Anthropic: releases each tool_use block as soon as its call is confirmed, in order', async () => {
    q.say(`${BASH_CALL}\n${READ_CALL}`);
    const res = await postJson(`${q.s.url}/v1/messages`, {
      model: M, max_tokens: 4000, stream: true, messages: ASK,
      tools: TOOLS.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters })),
    });
    const events = parseSse(await res.text()).map((e) => ({ event: e.event, data: JSON.parse(e.data) }));
    const blocks = events.filter((e) => e.event!.startsWith('content_block'));
    const seq = blocks.map((e) => `${e.event}:${e.data.index}`);
    const stop0 = seq.indexOf('content_block_stop:0');
    const start1 = seq.indexOf('content_block_start:1');
    expect(stop0).toBeGreaterThan(0);
    expect(start1).toBeGreaterThan(stop0);
    expect(blocks.filter((e) => e.event === 'content_block_start').map((e) => e.data.content_block)).toEqual([
      { type: 'tool_use', id: expect.stringMatching(/^toolu_[A-Za-z0-9]{24}$/), name: 'bash', input: {} },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_[A-Za-z0-9]{24}$/), name: 'read_file', input: {} },
    ]);
    const json0 = blocks.filter((e) => e.data.index === 0 && e.event === 'content_block_delta').map((e) => e.data.delta.partial_json).join('');
    expect(json0).toBe(BASH_ARGS);
    expect(events.find((e) => e.event === 'message_delta')!.data.delta.stop_reason).toBe('tool_use');
  });

  it('Anthropic: the official client gets tool_use blocks; disable_parallel_tool_use sends only the first', async () => {
    const client = new Anthropic({ baseURL: q.s.url, apiKey: 'unused', maxRetries: 0 });
    const tools = TOOLS.map((t) => ({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters as Anthropic.Tool.InputSchema }));
    q.say(`${BASH_CALL}\n${READ_CALL}`);
    const final = await client.messages.stream({ model: M, max_tokens: 4000, messages: ASK as Anthropic.MessageParam[], tools }).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content.map((b) => (b.type === 'tool_use' ? [b.name, b.input] : b.type))).toEqual([
      ['bash', { command: 'ls -la ~/tmp/' }],
      ['read_file', { path: '/etc/hosts' }],
    ]);
    q.say(`${BASH_CALL}\n${READ_CALL}`);
    const one = await client.messages.create({
      model: M, max_tokens: 4000, messages: ASK as Anthropic.MessageParam[], tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    expect(one.content.filter((b) => b.type === 'tool_use').map((b) => (b as Anthropic.ToolUseBlock).name)).toEqual(['bash']);
    expect(one.stop_reason).toBe('tool_use');

    // The client sends the call back with its result; kiln continues the conversation.
    const id = final.content[0]!.type === 'tool_use' ? final.content[0]!.id : '';
    q.say('Done.');
    const next = await client.messages.create({
      model: M, max_tokens: 50, tools,
      messages: [
        ...(ASK as Anthropic.MessageParam[]),
        { role: 'assistant', content: final.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'a.txt' }, { type: 'tool_result', tool_use_id: (final.content[1] as Anthropic.ToolUseBlock).id, content: '127.0.0.1 localhost' }] },
      ],
    });
    expect(next.content).toEqual([{ type: 'text', text: 'Done.' }]);
    expect(next.stop_reason).toBe('end_turn');
  });

  it('Responses: the call is its own item, completed and stored with the streamed ids, and the conversation continues', async () => {
    q.say(`Checking.\n${BASH_CALL}`);
    const client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const tools = TOOLS.map((t) => ({ type: 'function' as const, name: t.function.name, description: t.function.description, parameters: t.function.parameters, strict: false }));
    const stream = await client.responses.create({ model: M, input: 'List my tmp folder.', tools, stream: true });
    const added: OpenAI.Responses.ResponseOutputItem[] = [];
    const done: OpenAI.Responses.ResponseOutputItem[] = [];
    let args = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      if (ev.type === 'response.output_item.added') added.push(ev.item);
      if (ev.type === 'response.output_item.done') done.push(ev.item);
      if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    expect(done.map((i) => i.type)).toEqual(['message', 'function_call']);
    expect(added.map((i) => i.id)).toEqual(done.map((i) => i.id));
    expect(args).toBe(BASH_ARGS);
    const call = done[1] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'bash', arguments: BASH_ARGS });
    expect(call.id).toMatch(/^fc_/);
    expect(call.call_id).toMatch(/^call_/);
    expect(completed!.output).toEqual(done);

    q.say('Found a.txt.');
    const next = await client.responses.create({
      model: M, previous_response_id: completed!.id, tools,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'a.txt' }],
    });
    expect(next.output_text).toBe('Found a.txt.');
    // Exact replay: the previous prompt and the generated call are reused from the KV cache.
    expect(next.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(completed!.usage!.input_tokens);
  });
});

describe('hermes tool calls (tiny Qwen3, qwen3 template)', () => {
  let q: Awaited<ReturnType<typeof scriptedServer>>;
  beforeAll(async () => {
    q = await scriptedServer('qwen3.jinja');
  });
  afterAll(async () => q?.s.close());

  it('streams the model\'s own argument text live', async () => {
    const args = '{"command":"ls -la ~/tmp/","timeout":5}';
    q.say(`<tool_call>\n{"name": "bash", "arguments": ${args}}\n</tool_call>`);
    const r = await streamChat(q.s.url, {});
    expect(r.calls.map((c) => c.name)).toEqual(['bash']);
    expect(r.calls[0]!.arguments.join('')).toBe(args);
    expect(r.calls[0]!.arguments.length).toBeGreaterThan(2);
    expect(r.content.join('').trim()).toBe('');
    expect(r.finish).toBe('tool_calls');
  });
});
