// /v1/chat/completions as agent clients drive it (the AI SDK, LangChain, the Agents SDK): a
// streamed tool call opens with the role chunk OpenAI sends (content null, so the AI SDK opens no
// empty text part), a tool message must answer a call, and reasoning effort "none" turns the
// template's thinking off. The tiny Qwen3 model
// writes scripted replies (forced-replies.ts) under the Qwen3 template.
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AIMessageChunk, BaseMessageLike } from '@langchain/core/messages';
import { tool as langchainTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, OpenAIChatCompletionsModel, run, tool as agentTool } from '@openai/agents';
import { type LanguageModel, streamText, tool as aiTool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ForcedServer, forcedServer, QWEN_ID as M } from './forced-replies.js';
import { type Exchange, parseSse, postJson, recordingFetch } from './helpers.js';

const ARGS = { command: 'ls -la ~/tmp/' };
const CALL = `<tool_call>\n{"name": "bash", "arguments": ${JSON.stringify(ARGS)}}\n</tool_call>`;
const ASK = 'List my tmp folder.';
const TOOLS = [{
  type: 'function' as const,
  function: { name: 'bash', description: 'Runs a shell command', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
}];

describe('chat completions for agent clients', () => {
  let q: ForcedServer;
  let client: OpenAI;
  beforeAll(async () => {
    q = await forcedServer('qwen3.jinja');
    client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => q?.s.close());

  // OpenAI's stream of a tool call opens with {"role": "assistant", "content": null}; a text reply's
  // with "content": "".
  it('the role chunk says content null before a tool call and "" before text', async () => {
    const firstDelta = async () => {
      const res = await postJson(`${q.s.url}/v1/chat/completions`, { model: M, messages: [{ role: 'user', content: ASK }], tools: TOOLS, stream: true });
      return JSON.parse(parseSse(await res.text())[0]!.data).choices[0].delta;
    };
    q.say(CALL);
    expect(await firstDelta()).toEqual({ role: 'assistant', content: null });
    q.say('Sure.');
    expect(await firstDelta()).toEqual({ role: 'assistant', content: '' });
  });

  it('the AI SDK (openai chat and openai-compatible) streams a tool call without an empty text part', async () => {
    const models: [string, LanguageModel][] = [
      ['@ai-sdk/openai', createOpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused' }).chat(M)],
      ['@ai-sdk/openai-compatible', createOpenAICompatible({ name: 'kiln', baseURL: `${q.s.url}/v1`, apiKey: 'unused' }).chatModel(M)],
    ];
    for (const [name, model] of models) {
      q.say(CALL);
      const result = streamText({
        model, prompt: ASK, tools: { bash: aiTool({ description: 'Runs a shell command', inputSchema: z.object({ command: z.string() }) }) },
      });
      const parts: string[] = [];
      for await (const part of result.fullStream) parts.push(part.type);
      expect({ name, parts: parts.filter((p) => p.startsWith('text')) }).toEqual({ name, parts: [] });
      expect((await result.toolCalls).map((c) => [c.toolName, c.input])).toEqual([['bash', ARGS]]);
      expect((await result.content).map((c) => c.type)).toEqual(['tool-call']);
    }
  });

  it('LangChain\'s ChatOpenAI and the Agents SDK\'s chat completions model run a streamed tool loop', async () => {
    const log: Exchange[] = [];
    const model = new ChatOpenAI({ model: M, apiKey: 'unused', maxRetries: 0, configuration: { baseURL: `${q.s.url}/v1`, fetch: recordingFetch(log) } })
      .bindTools([langchainTool(async () => 'a.txt', { name: 'bash', description: 'Runs a shell command', schema: z.object({ command: z.string() }) })]);
    // stream() rather than invoke() with streaming: true, which counts tokens with a tokenizer it downloads.
    const streamed = async (messages: BaseMessageLike[]) => {
      let message: AIMessageChunk | undefined;
      for await (const chunk of await model.stream(messages)) message = message === undefined ? chunk : message.concat(chunk);
      return message!;
    };
    q.say(CALL, 'Found a.txt.');
    const ask = { role: 'user', content: ASK };
    const reply = await streamed([ask]);
    expect(reply.tool_calls!.map((c) => [c.name, c.args])).toEqual([['bash', ARGS]]);
    expect(reply.content).toBe('');
    const answer = await streamed([ask, reply, { role: 'tool', content: 'a.txt', tool_call_id: reply.tool_calls![0]!.id! }]);
    expect(answer.content).toBe('Found a.txt.');
    expect(log.map((e) => [e.status, e.body.stream])).toEqual([[200, true], [200, true]]);

    const openai = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const bash = agentTool({ name: 'bash', description: 'Runs a shell command', parameters: z.object({ command: z.string() }), execute: async () => 'a.txt' });
    const agent = new Agent({ name: 'shell', model: new OpenAIChatCompletionsModel(openai, M), tools: [bash] });
    q.say(CALL, 'Found a.txt.');
    const result = await run(agent, ASK, { stream: true });
    for await (const _ of result.toStream());
    await result.completed;
    expect(result.finalOutput).toBe('Found a.txt.');
  });

  it('the openai client\'s runTools helper runs a tool loop, streamed and not', async () => {
    const body = {
      model: M, messages: [{ role: 'user' as const, content: ASK }],
      tools: [{ type: 'function' as const, function: { ...TOOLS[0]!.function, parse: JSON.parse, function: async (args: typeof ARGS) => (args.command === ARGS.command ? 'a.txt' : 'wrong') } }],
    };
    for (const stream of [false, true]) {
      q.say(CALL, 'Found a.txt.');
      const runner = stream ? client.chat.completions.runTools({ ...body, stream: true }) : client.chat.completions.runTools(body);
      expect(await runner.finalContent()).toBe('Found a.txt.');
      expect((await runner.allChatCompletions()).map((c) => c.choices[0]!.finish_reason)).toEqual(['tool_calls', 'stop']);
    }
  });

  it('a tool message that answers no call is a 400 naming its tool_call_id', async () => {
    const err = await client.chat.completions.create({
      model: M,
      messages: [
        { role: 'user', content: ASK },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'bash', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_a', content: 'a.txt' },
        { role: 'tool', tool_call_id: 'call_b', content: 'b.txt' },
      ],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toContain('call_b');
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages[3].tool_call_id');
  });

  it('reasoning effort "none" turns the template\'s thinking off, unless chat_template_kwargs says otherwise', async () => {
    q.say('Sure.');
    const before = q.seen.length;
    const ask = [{ role: 'user' as const, content: ASK }];
    await client.chat.completions.create({ model: M, messages: ask, reasoning_effort: 'none' });
    await client.chat.completions.create({ model: M, messages: ask, reasoning_effort: 'low' });
    await client.chat.completions.create({ model: M, messages: ask, reasoning_effort: 'none', chat_template_kwargs: { enable_thinking: true } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    await client.responses.create({ model: M, input: ASK, reasoning: { effort: 'none' } });
    expect(q.seen.slice(before).map((o) => o.enableThinking)).toEqual([false, undefined, true, false]);
  });
});
