// /v1/messages as agent clients drive it: the official SDK's tool runner and thread helper send
// `thread`, which kiln refuses the way the SDK understands; thinking blocks carry a signature (in a
// signature_delta when streamed), which the AI SDK and LangChain need to send the thinking back; tool_use ids
// are toolu_ ids that still find kiln's recorded turn, so a tool loop is an exact-replay cache hit.
// The tiny Qwen3 model writes scripted replies (forced-replies.ts) under the Qwen3 template.
import { createAnthropic } from '@ai-sdk/anthropic';
import Anthropic from '@anthropic-ai/sdk';
import { ChatAnthropic } from '@langchain/anthropic';
import { tool as langchainTool } from '@langchain/core/tools';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { stepCountIs, streamText, tool as aiTool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ForcedServer, forcedServer, QWEN_ID as M } from './forced-replies.js';
import { type Exchange, parseSse, postJson, recordingFetch } from './helpers.js';

const REASONING = 'I should list the folder.';
const ARGS = { command: 'ls -la ~/tmp/' };
// Compact JSON, unlike the template's rendering of a call: only exact replay gives the cache the
// tokens the model wrote.
const CALL = `<tool_call>\n{"name":"bash","arguments":${JSON.stringify(ARGS)}}\n</tool_call>`;
const THINK_AND_CALL = `<think>\n${REASONING}\n</think>\n\n${CALL}`;
/** THINK_AND_CALL's reasoning as the tool-call streamer sends it (the model's own newlines). */
const SENT_REASONING = `\n${REASONING}\n`;
const ANSWER = 'Found a.txt.';
const ASK: Anthropic.MessageParam[] = [{ role: 'user', content: 'List my tmp folder.' }];
const TOOL = {
  name: 'bash', description: 'Runs a shell command',
  input_schema: { type: 'object' as const, properties: { command: { type: 'string' } }, required: ['command'] },
};
const THINKING = { type: 'enabled' as const, budget_tokens: 1024 };

describe('Anthropic agent clients', () => {
  let q: ForcedServer;
  let client: Anthropic;
  beforeAll(async () => {
    q = await forcedServer('qwen3.jinja');
    client = new Anthropic({ baseURL: q.s.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => q?.s.close());

  for (const stream of [false, true]) {
    it(`the SDK tool runner${stream ? ', streaming,' : ''} threads its first request; kiln refuses the thread and the runner goes on with the whole conversation`, async () => {
      const log: Exchange[] = [];
      const recording = new Anthropic({ baseURL: q.s.url, apiKey: 'unused', maxRetries: 0, fetch: recordingFetch(log) });
      const bash = betaTool({
        name: 'bash', description: 'Runs a shell command', run: async () => 'a.txt',
        inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } as const,
      });
      q.say(CALL, ANSWER);
      const final = await recording.beta.messages.toolRunner({ model: M, max_tokens: 500, messages: ASK, tools: [bash], stream });
      expect(final.content).toMatchObject([{ type: 'text', text: ANSWER }]);
      expect(log.map((e) => [e.status, e.body.thread ?? null, e.body.stream ?? false])).toEqual([[400, { type: 'create' }, stream], [200, null, stream], [200, null, stream]]);
      expect(JSON.parse(log[0]!.reply)).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining('thread'), details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } },
      });
      // Without a thread, each turn carries the whole conversation: the call and its result.
      expect(log[2]!.body.messages.map((m: Anthropic.MessageParam) => [m.role, typeof m.content === 'string' ? 'text' : m.content.map((b) => b.type)]))
        .toEqual([['user', 'text'], ['assistant', ['tool_use']], ['user', ['tool_result']]]);
    });
  }

  it('a thread from the SDK\'s thread helper is refused as unsupported: an error by default, the whole conversation with continue_unthreaded', async () => {
    q.say('Hello.');
    const thread = client.beta.messages.thread({ model: M, max_tokens: 50 });
    const err = await thread.send({ role: 'user', content: 'Hi' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err).toMatchObject({ errorCode: 'thread_unsupported_request', details: { unsupported: ['thread'] } });

    const log: Exchange[] = [];
    const recording = new Anthropic({ baseURL: q.s.url, apiKey: 'unused', maxRetries: 0, fetch: recordingFetch(log) });
    const fallback = recording.beta.messages.thread({ model: M, max_tokens: 50, unsupportedRequestBehavior: 'continue_unthreaded' });
    expect((await fallback.send({ role: 'user', content: 'Hi' })).content).toMatchObject([{ type: 'text', text: 'Hello.' }]);
    await fallback.send({ role: 'user', content: 'And you?' });
    expect(log.map((e) => [e.status, e.body.thread ?? null, e.body.messages.length])).toEqual([[400, { type: 'create' }, 1], [200, null, 1], [200, null, 3]]);
  });

  // Anthropic's streaming reference: a thinking block ends with a signature_delta, then its
  // content_block_stop.
  it('a thinking block ends with a signature_delta; the SDK\'s stream helper and the unstreamed message carry the same signature', async () => {
    q.say(THINK_AND_CALL);
    const res = await postJson(`${q.s.url}/v1/messages`, { model: M, max_tokens: 500, stream: true, thinking: THINKING, tools: [TOOL], messages: ASK });
    const events = parseSse(await res.text()).map((e) => JSON.parse(e.data));
    const thinking = events.filter((e) => e.index === 0).map((e) => e.delta?.type ?? e.type);
    expect(thinking.slice(-2)).toEqual(['signature_delta', 'content_block_stop']);
    expect(thinking.filter((t) => t === 'signature_delta')).toHaveLength(1);

    q.say(THINK_AND_CALL);
    const streamed = await client.messages.stream({ model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL], messages: ASK }).finalMessage();
    q.say(THINK_AND_CALL);
    const plain = await client.messages.create({ model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL], messages: ASK });
    const block = streamed.content[0] as Anthropic.ThinkingBlock;
    expect(block).toEqual({ type: 'thinking', thinking: SENT_REASONING, signature: expect.stringMatching(/^[A-Za-z0-9+/]{16,}=*$/) });
    expect(plain.content[0]).toEqual(block);
  });

  it('a tool loop through the official client: toolu_ ids, and the second request reuses the whole first one and its reply', async () => {
    const loop = async () => {
      q.say(THINK_AND_CALL);
      const first = await client.messages.create({ model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL], messages: ASK });
      const call = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      expect(call.id).toMatch(/^toolu_[A-Za-z0-9]{24}$/);
      q.say(ANSWER);
      const next = await client.messages.create({
        model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL],
        messages: [...ASK, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'a.txt' }] }],
      });
      expect(next.content).toEqual([{ type: 'text', text: ANSWER }]);
      return { first: first.usage, cached: next.usage.cache_read_input_tokens! };
    };
    const { first, cached } = await loop();
    expect(cached).toBe(first.input_tokens + first.cache_read_input_tokens! + first.output_tokens);

    // The control: without exact replay the template's rendering of the call parts from the model's tokens.
    const plain = await forcedServer('qwen3.jinja', {}, { replay: false });
    try {
      const c = new Anthropic({ baseURL: plain.s.url, apiKey: 'unused', maxRetries: 0 });
      plain.say(THINK_AND_CALL);
      const again = await c.messages.create({ model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL], messages: ASK });
      plain.say(ANSWER);
      const call = again.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      const next = await c.messages.create({
        model: M, max_tokens: 500, thinking: THINKING, tools: [TOOL],
        messages: [...ASK, { role: 'assistant', content: again.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'a.txt' }] }],
      });
      expect(next.usage.cache_read_input_tokens).toBeLessThan(cached);
    } finally {
      await plain.s.close();
    }
  });

  it('the AI SDK keeps kiln\'s thinking in a streamed tool loop (the signature came in a signature_delta) and the turn is replayed', async () => {
    const log: Exchange[] = [];
    const anthropic = createAnthropic({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', fetch: recordingFetch(log) });
    const before = q.seen.length;
    q.say(THINK_AND_CALL, ANSWER);
    const result = streamText({
      model: anthropic(M),
      prompt: 'List my tmp folder.',
      tools: { bash: aiTool({ description: 'Runs a shell command', inputSchema: z.object({ command: z.string() }), execute: async () => 'a.txt' }) },
      providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 1024 } } },
      maxOutputTokens: 500,
      stopWhen: stepCountIs(3),
    });
    expect(await result.text).toBe(ANSWER);
    const steps = await result.steps;
    expect(steps.flatMap((s) => s.warnings ?? []).map((w) => JSON.stringify(w))).not.toContainEqual(expect.stringContaining('reasoning metadata'));
    const sent = log[1]!.body.messages[1].content as { type: string; thinking?: string; signature?: string }[];
    expect(sent[0]).toEqual({ type: 'thinking', thinking: SENT_REASONING, signature: expect.any(String) });
    expect(q.assistantTurns(before + 1)).toMatchObject([{ reasoning_content: SENT_REASONING }]);
    expect(steps[1]!.usage.cachedInputTokens).toBeGreaterThan(steps[0]!.usage.outputTokens!);
    const first = JSON.parse(parseSse(log[0]!.reply)[0]!.data).message.usage;
    const second = JSON.parse(parseSse(log[1]!.reply)[0]!.data).message.usage;
    expect(second.cache_read_input_tokens).toBe(first.input_tokens + first.cache_read_input_tokens + steps[0]!.usage.outputTokens!);
  });

  it('LangChain\'s ChatAnthropic, streaming, sends the thinking back with its signature, and the loop continues', async () => {
    const log: Exchange[] = [];
    const model = new ChatAnthropic({
      model: M, apiKey: 'unused', anthropicApiUrl: q.s.url, streaming: true, maxRetries: 0, maxTokens: 500, thinking: THINKING,
      clientOptions: { fetch: recordingFetch(log) },
    }).bindTools([langchainTool(async () => 'a.txt', { name: 'bash', description: 'Runs a shell command', schema: z.object({ command: z.string() }) })]);
    const before = q.seen.length;
    q.say(THINK_AND_CALL, ANSWER);
    const ask = { role: 'user', content: 'List my tmp folder.' };
    const reply = await model.invoke([ask]);
    expect(reply.tool_calls!.map((c) => [c.name, c.args, c.id!.slice(0, 6)])).toEqual([['bash', ARGS, 'toolu_']]);
    const answer = await model.invoke([ask, reply, { role: 'tool', content: 'a.txt', tool_call_id: reply.tool_calls![0]!.id! }]);
    expect(answer.text).toBe(ANSWER);
    const sent = log[1]!.body.messages[1].content as { type: string }[];
    expect(sent[0]).toEqual({ type: 'thinking', thinking: SENT_REASONING, signature: expect.stringMatching(/^[A-Za-z0-9+/]{16,}=*$/) });
    expect(q.assistantTurns(before + 1)).toMatchObject([{ reasoning_content: SENT_REASONING }]);
  });

  it('thinking shown "omitted": the client gets only the signature, sends it back, and the turn reaches the template whole', async () => {
    q.say(THINK_AND_CALL);
    const first = await client.messages.create({
      model: M, max_tokens: 500, tools: [TOOL], messages: ASK, thinking: { ...THINKING, display: 'omitted' },
    });
    const block = first.content[0] as Anthropic.ThinkingBlock;
    expect(block).toEqual({ type: 'thinking', thinking: '', signature: expect.any(String) });
    const call = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    q.say(ANSWER);
    const before = q.seen.length;
    await client.messages.create({
      model: M, max_tokens: 500, tools: [TOOL], thinking: { ...THINKING, display: 'omitted' },
      messages: [...ASK, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'a.txt' }] }],
    });
    expect(q.assistantTurns(before)).toMatchObject([{ reasoning_content: SENT_REASONING }]);
  });

  it('a thinking block signed elsewhere is taken as it is', async () => {
    q.say(ANSWER);
    const before = q.seen.length;
    const reply = await client.messages.create({
      model: M, max_tokens: 50, tools: [TOOL],
      messages: [
        ...ASK,
        { role: 'assistant', content: [
          { type: 'thinking', thinking: 'List it.', signature: 'EqQBCkgIBhABGAIiQL3Uj2rc9aPnWd4vGm0x2Y' },
          { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'bash', input: ARGS },
        ] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: 'a.txt' }] },
      ],
    });
    expect(reply.content).toEqual([{ type: 'text', text: ANSWER }]);
    expect(q.assistantTurns(before)).toEqual([{
      role: 'assistant', content: null, reasoning_content: 'List it.',
      tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'bash', arguments: JSON.stringify(ARGS) } }],
    }]);
  });

  it('a tool_result that answers no tool_use is a 400 naming its id', async () => {
    const err = await client.messages.create({
      model: M, max_tokens: 50, tools: [TOOL],
      messages: [...ASK, { role: 'assistant', content: 'Sure.' }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nowhere', content: 'x' }] }],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as Error).message).toContain('toolu_nowhere');
    expect((err as Error).message).toContain('messages[2].content[0].tool_use_id');
  });
});
