// /v1/responses as agent clients drive it: the AI SDK's Responses model sends earlier items as
// item_reference, the Agents SDK and LangChain send kiln's reasoning items back, stateless clients
// carry reasoning in encrypted_content, and every shape reaches the template as the turn kiln
// generated, so exact replay reuses it from the KV cache. The tiny Qwen3 model writes scripted
// replies (forced-replies.ts) under the Qwen3 template, which keeps a tool loop's thinking.
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { tool as langchainTool } from '@langchain/core/tools';
import { Agent, OpenAIResponsesModel, run, tool as agentTool } from '@openai/agents';
import { generateText, stepCountIs, streamText, tool as aiTool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ForcedServer, forcedServer, QWEN_ID as M } from './forced-replies.js';
import { type Exchange, recordingFetch } from './helpers.js';

const REASONING = 'I should list the folder.';
const ARGS = { command: 'ls -la ~/tmp/' };
const CALL = `<tool_call>\n{"name": "bash", "arguments": ${JSON.stringify(ARGS)}}\n</tool_call>`;
const THINK_AND_CALL = `<think>\n${REASONING}\n</think>\n\nChecking.\n${CALL}`;
/** THINK_AND_CALL's reasoning and text as the tool-call streamer sends them (the model's own newlines). */
const SENT_REASONING = `\n${REASONING}\n`;
const SENT_TEXT = '\n\nChecking.\n';
const ANSWER = 'Found a.txt.';
const ASK = 'List my tmp folder.';
const TOOL = {
  type: 'function' as const, name: 'bash', description: 'Runs a shell command', strict: false,
  parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

describe('Responses input items from agent clients', () => {
  let q: ForcedServer;
  let client: OpenAI;
  beforeAll(async () => {
    q = await forcedServer('qwen3.jinja');
    client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => q?.s.close());

  it('a tool loop that sends every earlier item as item_reference reuses exactly the cache of one that resends the items', async () => {
    const turn = async (previous: (out: OpenAI.Responses.ResponseOutputItem[]) => OpenAI.Responses.ResponseInputItem[]) => {
      q.say(THINK_AND_CALL);
      const first = await client.responses.create({ model: M, input: ASK, tools: [TOOL] });
      expect(first.output.map((i) => i.type)).toEqual(['reasoning', 'message', 'function_call']);
      const call = first.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
      q.say(ANSWER);
      const next = await client.responses.create({
        model: M, tools: [TOOL],
        input: [{ role: 'user', content: ASK }, ...previous(first.output), { type: 'function_call_output', call_id: call.call_id, output: 'a.txt' }],
      });
      expect(next.output_text).toBe(ANSWER);
      return { first, cached: next.usage!.input_tokens_details.cached_tokens };
    };
    const byReference = await turn((out) => out.map((i) => ({ type: 'item_reference' as const, id: i.id! })));
    const resent = await turn((out) => out as OpenAI.Responses.ResponseInputItem[]);
    expect(byReference.cached).toBe(resent.cached);
    // Both reuse the whole first request and the reply (exact replay of the turn).
    expect(byReference.cached).toBeGreaterThanOrEqual(byReference.first.usage!.input_tokens + byReference.first.usage!.output_tokens);
    // The referenced turn reached the template whole: text, reasoning and the call.
    expect(q.assistantTurns(1)).toEqual([{
      role: 'assistant', content: SENT_TEXT, reasoning_content: SENT_REASONING,
      tool_calls: [{ id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'bash', arguments: JSON.stringify(ARGS) } }],
    }]);
    expect(q.assistantTurns(3)).toEqual(q.assistantTurns(1).map((m) => ({ ...m, tool_calls: [expect.anything()] })));
  });

  for (const stream of [false, true]) {
    it(`the AI SDK's Responses model (item_reference for earlier text and reasoning) runs a tool loop${stream ? ', streamed' : ''}, and its second step is a cache hit`, async () => {
      const log: Exchange[] = [];
      const provider = createOpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', fetch: recordingFetch(log) });
      q.say(THINK_AND_CALL, ANSWER);
      const options = {
        model: provider.responses(M),
        prompt: ASK,
        tools: { bash: aiTool({ description: 'Runs a shell command', inputSchema: z.object({ command: z.string() }), execute: async () => 'a.txt' }) },
        stopWhen: stepCountIs(3),
      };
      const result = stream ? streamText(options) : await generateText(options);
      const steps = await result.steps;
      expect(await result.text).toBe(ANSWER);
      expect(steps).toHaveLength(2);
      expect(steps[0]!.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['bash', ARGS]]);
      expect(log.map((e) => e.body.stream ?? false)).toEqual([stream, stream]);
      const second = log[1]!.body.input as { type?: string; id?: string }[];
      expect(second.filter((i) => i.type === 'item_reference').map((i) => i.id!.split('_')[0])).toEqual(['rs', 'msg']);
      expect(steps[1]!.usage.cachedInputTokens).toBeGreaterThanOrEqual(steps[0]!.usage.inputTokens! + steps[0]!.usage.outputTokens!);
    });
  }

  it('an item_reference to an item kiln does not hold is a 400 that names it and says what to send', async () => {
    const small = await forcedServer('qwen3.jinja', { responsesStoreSize: 1 });
    try {
      const c = new OpenAI({ baseURL: `${small.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      small.say('Hello.');
      const kept = await c.responses.create({ model: M, input: 'Hi' });
      const id = kept.output[0]!.id!;
      const refer = () => c.responses.create({ model: M, input: [{ type: 'item_reference', id }, { role: 'user', content: 'And?' }] });
      await expect(refer()).resolves.toMatchObject({ status: 'completed' });
      // A later response evicts the first from a store of one.
      await c.responses.create({ model: M, input: 'Hi again' });
      for (const missing of [id, 'msg_0000', 'rs_notkilns']) {
        const err = await c.responses.create({ model: M, input: [{ type: 'item_reference', id: missing }] }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OpenAI.BadRequestError);
        expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(missing);
        expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('store: false');
        expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[0].id');
      }
      // Not stored at all.
      const unstored = await c.responses.create({ model: M, input: 'Hi', store: false });
      const err = await c.responses.create({ model: M, input: [{ type: 'item_reference', id: unstored.output[0]!.id! }] }).catch((e: unknown) => e);
      expect((err as { status?: number }).status).toBe(400);
    } finally {
      await small.s.close();
    }
  });

  for (const stream of [false, true]) {
    it(`the Agents SDK${stream ? ', streaming,' : ''} sends kiln's reasoning item back and it reaches the template as the turn's reasoning`, async () => {
      const log: Exchange[] = [];
      const openai = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0, fetch: recordingFetch(log) });
      const bash = agentTool({
        name: 'bash', description: 'Runs a shell command', parameters: z.object({ command: z.string() }), execute: async () => 'a.txt',
      });
      const agent = new Agent({ name: 'shell', instructions: 'You run commands.', model: new OpenAIResponsesModel(openai, M), tools: [bash] });
      const before = q.seen.length;
      q.say(THINK_AND_CALL, ANSWER);
      let output: unknown;
      if (stream) {
        const result = await run(agent, ASK, { stream: true });
        for await (const _ of result.toStream());
        await result.completed;
        output = result.finalOutput;
      } else {
        output = (await run(agent, ASK)).finalOutput;
      }
      expect(output).toBe(ANSWER);
      expect(log.map((e) => e.body.stream ?? false)).toEqual([stream, stream]);
      const sent = (log[1]!.body.input as { type?: string }[]).find((i) => i.type === 'reasoning');
      expect(sent).toMatchObject({ type: 'reasoning', content: [{ type: 'reasoning_text', text: SENT_REASONING }] });
      expect(q.assistantTurns(before + 1)).toMatchObject([{ content: SENT_TEXT, reasoning_content: SENT_REASONING }]);
    });
  }

  it('LangChain (ChatOpenAI on the Responses API, streaming) sends kiln\'s items back, reasoning included, and the loop continues', async () => {
    const log: Exchange[] = [];
    const model = new ChatOpenAI({
      model: M, apiKey: 'unused', useResponsesApi: true, streaming: true, maxRetries: 0,
      configuration: { baseURL: `${q.s.url}/v1`, fetch: recordingFetch(log) },
    }).bindTools([langchainTool(async () => 'a.txt', { name: 'bash', description: 'Runs a shell command', schema: z.object({ command: z.string() }) })]);
    const before = q.seen.length;
    q.say(THINK_AND_CALL, ANSWER);
    const ask = { role: 'user', content: ASK };
    const reply = await model.invoke([ask]);
    expect(reply.tool_calls!.map((c) => [c.name, c.args])).toEqual([['bash', ARGS]]);
    const answer = await model.invoke([ask, reply, { role: 'tool', content: 'a.txt', tool_call_id: reply.tool_calls![0]!.id! }]);
    expect(answer.text).toBe(ANSWER);
    expect((log[1]!.body.input as { type?: string }[]).map((i) => i.type ?? 'message')).toEqual(['message', 'reasoning', 'message', 'function_call', 'function_call_output']);
    expect(q.assistantTurns(before + 1)).toMatchObject([{ content: SENT_TEXT, reasoning_content: SENT_REASONING }]);
  });

  it('a reasoning item sent back with only its id and summary gets its text from the store', async () => {
    q.say(THINK_AND_CALL);
    const first = await client.responses.create({ model: M, input: ASK, tools: [TOOL] });
    const [reasoning, text, call] = first.output as [OpenAI.Responses.ResponseReasoningItem, OpenAI.Responses.ResponseOutputMessage, OpenAI.Responses.ResponseFunctionToolCall];
    q.say(ANSWER);
    const before = q.seen.length;
    await client.responses.create({
      model: M, tools: [TOOL],
      // As LangChain builds a reasoning item from what it kept of a stream: its id and summary.
      input: [{ role: 'user', content: ASK }, { type: 'reasoning', id: reasoning.id, summary: [] }, text, call, { type: 'function_call_output', call_id: call.call_id, output: 'a.txt' }],
    });
    expect(q.assistantTurns(before)).toMatchObject([{ content: SENT_TEXT, reasoning_content: SENT_REASONING }]);
  });

  it('a stateless client gets the reasoning back from encrypted_content, which kiln fills when asked', async () => {
    q.say(THINK_AND_CALL);
    const first = await client.responses.create({ model: M, input: ASK, tools: [TOOL], store: false, include: ['reasoning.encrypted_content'] });
    const reasoning = first.output[0] as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.encrypted_content).toEqual(expect.any(String));
    const call = first.output[2] as OpenAI.Responses.ResponseFunctionToolCall;
    q.say(ANSWER);
    const before = q.seen.length;
    await client.responses.create({
      model: M, tools: [TOOL], store: false,
      input: [
        { role: 'user', content: ASK },
        // As the AI SDK sends it with store: false: the summary (empty) and the sealed reasoning.
        { type: 'reasoning', id: reasoning.id, summary: [], encrypted_content: reasoning.encrypted_content! },
        first.output[1] as OpenAI.Responses.ResponseOutputMessage,
        call,
        { type: 'function_call_output', call_id: call.call_id, output: 'a.txt' },
      ],
    });
    expect(q.assistantTurns(before)).toMatchObject([{ content: SENT_TEXT, reasoning_content: SENT_REASONING }]);
  });

  it('a reasoning item from elsewhere (only a summary) is the turn\'s reasoning too', async () => {
    q.say(ANSWER);
    const before = q.seen.length;
    await client.responses.create({
      model: M,
      input: [
        { role: 'user', content: 'Hi' },
        { type: 'reasoning', id: 'rs_other', summary: [{ type: 'summary_text', text: 'Greet back.' }] },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'How are you?' },
      ],
    });
    expect(q.assistantTurns(before)).toEqual([{ role: 'assistant', content: 'Hello!', reasoning_content: 'Greet back.' }]);
  });

  it('a function_call_output that answers no call is a 400 naming its call_id', async () => {
    const err = await client.responses.create({
      model: M, input: [{ role: 'user', content: ASK }, { type: 'function_call_output', call_id: 'call_nowhere', output: 'x' }],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toContain('call_nowhere');
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[1].call_id');
  });
});

describe('Responses output items', () => {
  let q: ForcedServer;
  let client: OpenAI;
  beforeAll(async () => {
    q = await forcedServer('qwen3.jinja');
    client = new OpenAI({ baseURL: `${q.s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(async () => q?.s.close());

  // The OpenAI streaming reference: reasoning text streams as response.reasoning_text.delta and
  // ends with response.reasoning_text.done; the item has `reasoning_text` content.
  it('streams reasoning as a reasoning item with reasoning_text content, and the same item unstreamed', async () => {
    q.say(`<think>\n${REASONING}\n</think>\n\n${ANSWER}`);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await client.responses.create({ model: M, input: ASK, tools: [TOOL], stream: true })) events.push(ev);
    const reasoningEvents = events.filter((e) => e.type.startsWith('response.reasoning_text.'));
    expect([...new Set(reasoningEvents.map((e) => e.type))]).toEqual(['response.reasoning_text.delta', 'response.reasoning_text.done']);
    const done = events.find((e) => e.type === 'response.reasoning_text.done') as OpenAI.Responses.ResponseReasoningTextDoneEvent;
    expect(done.text.trim()).toBe(REASONING);
    const completed = (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response;
    expect(completed.output[0]).toMatchObject({ type: 'reasoning', status: 'completed', summary: [], content: [{ type: 'reasoning_text', text: done.text }] });
    expect(completed.output[1]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: `\n\n${ANSWER}` }] });

    // (toMatchObject: the stream helper adds its own `parsed` to text parts.)
    const sameItems = (r: OpenAI.Responses.Response) => expect(r.output.map((i) => ({ ...i, id: i.type }))).toMatchObject(completed.output.map((i) => ({ ...i, id: i.type })));
    q.say(`<think>\n${REASONING}\n</think>\n\n${ANSWER}`);
    sameItems(await client.responses.create({ model: M, input: ASK, tools: [TOOL] }));
    // The client's stream helper assembles the same items from the events.
    q.say(`<think>\n${REASONING}\n</think>\n\n${ANSWER}`);
    sameItems(await client.responses.stream({ model: M, input: ASK, tools: [TOOL] }).finalResponse());
  });

  // The reference: an output item's status is "incomplete" when the response was cut off.
  it('a message cut by max_output_tokens is an incomplete item of an incomplete response, streamed or not', async () => {
    q.say('Once upon a time there was a folder.');
    const cut = await client.responses.create({ model: M, input: ASK, max_output_tokens: 3 });
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(cut.output.map((i) => [i.type, (i as { status: string }).status])).toEqual([['message', 'incomplete']]);

    q.say('Once upon a time there was a folder.');
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await client.responses.create({ model: M, input: ASK, max_output_tokens: 3, stream: true })) events.push(ev);
    const itemDone = events.find((e) => e.type === 'response.output_item.done') as OpenAI.Responses.ResponseOutputItemDoneEvent;
    expect(itemDone.item).toMatchObject({ type: 'message', status: 'incomplete' });
    expect(events.at(-1)!.type).toBe('response.incomplete');

    q.say('Short.');
    const whole = await client.responses.create({ model: M, input: ASK, max_output_tokens: 50 });
    expect(whole.output.map((i) => (i as { status: string }).status)).toEqual(['completed']);
  });
});
