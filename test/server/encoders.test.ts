// The protocol stages on their own: OpenAI chat/completion encoders, the
// Anthropic encoder's early-release and barrier rules, the Responses encoder's items, and the
// accumulator the non-streaming bodies come from.
import { describe, expect, it } from 'vitest';
import { AnthropicMessagesEncoder } from '../../src/server/anthropic-messages-encoder.js';
import type { GenerationDone, GenerationEvent, StreamEncoder, ToolCallEvent } from '../../src/server/generation-events.js';
import { OpenAIChatEncoder } from '../../src/server/openai-chat-encoder.js';
import { OpenAICompletionEncoder } from '../../src/server/openai-completion-encoder.js';
import { ReplyAccumulator } from '../../src/server/reply-accumulator.js';
import { storedItems } from '../../src/server/response-items.js';
import { type ResponseObject, ResponsesEncoder } from '../../src/server/responses-encoder.js';
import { ResponsesStore } from '../../src/server/responses-store.js';
import { sealReasoning, unsealReasoning } from '../../src/server/sealed-reasoning.js';
import { fromAnthropicToolId, toAnthropicToolId } from '../../src/server/anthropic-tool-ids.js';
import { parseSse } from './helpers.js';

const DONE: GenerationDone = { finishReason: 'stop', usage: { promptTokens: 10, completionTokens: 7, cachedTokens: 4 } };
const START = { promptTokens: 10, cachedTokens: 4 };

const start = (index: number, name: string, id = `call_${index}`): ToolCallEvent => ({ type: 'tool_call_start', index, id, name });
const args = (index: number, delta: string): ToolCallEvent => ({ type: 'tool_call_arguments', index, delta });
const end = (index: number): ToolCallEvent => ({ type: 'tool_call_end', index });
const content = (text: string): ToolCallEvent => ({ type: 'content', text });

/** Runs events through an encoder; returns the frames after each push (open first, finish last). */
function frames(encoder: StreamEncoder, events: GenerationEvent[], done = DONE): string[] {
  return [encoder.open(START), ...events.map((e) => encoder.push(e)), encoder.finish(done)];
}

function json(body: string): { event: string | null; data: any }[] {
  return parseSse(body).map((e) => ({ event: e.event, data: e.data === '[DONE]' ? '[DONE]' : JSON.parse(e.data) }));
}

/** Collects each log line (message and fields) as one string. */
function silentLogger(warnings: string[] = []) {
  const log = (msg: string, fields?: object) => void warnings.push(msg + JSON.stringify(fields ?? {}));
  return { warn: log, error: log };
}

describe('OpenAIChatEncoder', () => {
  const opts = { id: 'chatcmpl-1', model: 'm', created: 5, includeUsage: false };

  const deltasOf = (events: GenerationEvent[]) =>
    json(frames(new OpenAIChatEncoder(opts), events).join('')).filter((e) => e.data !== '[DONE]').map((e) => e.data.choices[0].delta);

  it('streams role, content, reasoning and tool calls as OpenAI documents them', () => {
    const out = json(frames(new OpenAIChatEncoder(opts), [
      { type: 'reasoning', text: 'hmm' }, content('Hi'), start(0, 'bash', 'call_x'), args(0, '{"a"'), args(0, ':1}'), end(0),
    ]).join(''));
    const deltas = out.filter((e) => e.data !== '[DONE]').map((e) => e.data.choices[0].delta);
    expect(deltas).toEqual([
      { role: 'assistant', content: null },
      { reasoning_content: 'hmm' },
      { content: 'Hi' },
      { tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'bash', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] },
      {},
    ]);
    const last = out[out.length - 2]!.data;
    expect(last.choices[0].finish_reason).toBe('tool_calls');
    expect(out[out.length - 1]!.data).toBe('[DONE]');
    for (const e of out.slice(0, -1)) {
      expect(e.data).toMatchObject({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 5, model: 'm' });
      expect('usage' in e.data).toBe(false);
    }
  });

  // OpenAI's stream: `"content": ""` in the role chunk of a text reply, null in that of a tool call.
  it('opens a tool-call reply with content null and a text reply (or an empty one) with ""', () => {
    expect(deltasOf([start(0, 'bash', 'call_x'), args(0, '{}'), end(0)]).slice(0, 2)).toEqual([
      { role: 'assistant', content: null },
      { tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'bash', arguments: '' } }] },
    ]);
    expect(deltasOf([content('Hi')])).toEqual([{ role: 'assistant', content: '' }, { content: 'Hi' }, {}]);
    expect(deltasOf([])).toEqual([{ role: 'assistant', content: '' }, {}]);
  });

  it('puts each token\'s logprobs on the next chunk, and what is left on the finish chunk', () => {
    const lp = (token: string, logprob: number): GenerationEvent => ({
      type: 'logprob', logprob: { id: 1, token, bytes: [...Buffer.from(token)], logprob, top: [{ id: 1, token, bytes: [...Buffer.from(token)], logprob }] },
    });
    const out = json(frames(new OpenAIChatEncoder(opts), [lp('H', -0.5), lp('i', -1), content('Hi'), lp('<', -2)]).join(''));
    const chunks = out.filter((e) => e.data !== '[DONE]').map((e) => e.data.choices[0].logprobs);
    expect(chunks[0]).toBeNull();
    expect(chunks[1]).toEqual({
      content: [
        { token: 'H', logprob: -0.5, bytes: [72], top_logprobs: [{ token: 'H', logprob: -0.5, bytes: [72] }] },
        { token: 'i', logprob: -1, bytes: [105], top_logprobs: [{ token: 'i', logprob: -1, bytes: [105] }] },
      ],
      refusal: null,
    });
    expect(chunks[2].content.map((e: { token: string }) => e.token)).toEqual(['<']);
  });

  it('finishes stop (or length) when no call was confirmed, and sends usage when asked', () => {
    const out = json(frames(new OpenAIChatEncoder({ ...opts, includeUsage: true }), [start(0, 'bash'), args(0, '{"a"')], {
      ...DONE, finishReason: 'length',
    }).join(''));
    expect(out[out.length - 3]!.data.choices[0].finish_reason).toBe('length');
    expect(out[out.length - 2]!.data).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 7, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } },
    });
    for (const e of out.slice(0, -2)) expect(e.data.usage).toBeNull();
  });
});

describe('OpenAICompletionEncoder', () => {
  it('streams text_completion chunks, then finish_reason, then [DONE]', () => {
    const out = json(frames(new OpenAICompletionEncoder({ id: 'cmpl-1', model: 'm', created: 1, includeUsage: false }), [content('a'), content('b')]).join(''));
    expect(out.map((e) => (e.data === '[DONE]' ? e.data : [e.data.choices[0].text, e.data.choices[0].finish_reason]))).toEqual([
      ['a', null], ['b', null], ['', 'stop'], '[DONE]',
    ]);
  });
});

describe('AnthropicMessagesEncoder', () => {
  const enc = (warnings?: string[]) => new AnthropicMessagesEncoder({ id: 'msg_1', model: 'm', logger: silentLogger(warnings) });

  it('opens with message_start and ping, and closes with message_delta and message_stop', () => {
    const out = json(frames(enc(), [content('Hello')]).join(''));
    expect(out.map((e) => e.event)).toEqual([
      'message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(out.every((e) => e.event === e.data.type)).toBe(true);
    expect(out[0]!.data.message).toMatchObject({
      id: 'msg_1', type: 'message', role: 'assistant', content: [], stop_reason: null,
      usage: { input_tokens: 6, cache_read_input_tokens: 4, output_tokens: 0 },
    });
    expect(out[2]!.data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(out[3]!.data.delta).toEqual({ type: 'text_delta', text: 'Hello' });
    expect(out[5]!.data).toMatchObject({ delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } });
  });

  it('reports the stop sequence that ended the reply, unless a call reached the client', () => {
    const e = enc();
    const out = json(frames(e, [content('Hi')], { ...DONE, stopSequence: '###' }).join(''));
    expect(out.at(-2)!.data.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: '###' });
    expect(e.result).toMatchObject({ stopReason: 'stop_sequence', stopSequence: '###' });
    const called = json(frames(enc(), [start(0, 'ls'), args(0, '{}'), end(0)], { ...DONE, stopSequence: '###' }).join(''));
    expect(called.at(-2)!.data.delta).toEqual({ stop_reason: 'tool_use', stop_sequence: null });
  });

  it('closes a confirmed call as soon as it ends, before later calls are generated', () => {
    const e = enc();
    e.open(START);
    const pushes = [content('Let me look.'), start(0, 'ls'), args(0, '{"p":'), args(0, '"/"}'), end(0), start(1, 'cat'), args(1, '{"f":1}'), end(1)]
      .map((ev) => json(e.push(ev)));
    // The first call's block stops on its own tool_call_end push.
    expect(pushes[4]!.map((x) => x.event)).toEqual(['content_block_stop']);
    expect(pushes[4]![0]!.data.index).toBe(1);
    expect(pushes[1]!.map((x) => x.data)).toEqual([
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_call_0', name: 'ls', input: {} } },
    ]);
    expect(pushes[2]![0]!.data.delta).toEqual({ type: 'input_json_delta', partial_json: '{"p":' });
    expect(pushes[7]!.map((x) => x.data)).toEqual([{ type: 'content_block_stop', index: 2 }]);
    const tail = json(e.finish(DONE));
    expect(tail.map((x) => x.event)).toEqual(['message_delta', 'message_stop']);
    expect(tail[0]!.data.delta.stop_reason).toBe('tool_use');
    expect(e.result.content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_call_0', name: 'ls', input: { p: '/' } },
      { type: 'tool_use', id: 'toolu_call_1', name: 'cat', input: { f: 1 } },
    ]);
  });

  it('holds a call with empty arguments open until the end, and everything after it waits', () => {
    const e = enc();
    e.open(START);
    expect(json(e.push(start(0, 'now')))).toHaveLength(1);
    expect(e.push(end(0))).toBe('');
    // A later call and text are held behind the barrier.
    expect(e.push(start(1, 'ls'))).toBe('');
    expect(e.push(args(1, '{"p":"/"}'))).toBe('');
    expect(e.push(end(1))).toBe('');
    expect(e.push(content('done'))).toBe('');
    const tail = json(e.finish(DONE));
    expect(tail.map((x) => [x.event, x.data.index ?? null, x.data.content_block?.type ?? x.data.delta?.type ?? null])).toEqual([
      ['content_block_stop', 0, null],
      ['content_block_start', 1, 'tool_use'],
      ['content_block_delta', 1, 'input_json_delta'],
      ['content_block_stop', 1, null],
      ['content_block_start', 2, 'text'],
      ['content_block_delta', 2, 'text_delta'],
      ['content_block_stop', 2, null],
      ['message_delta', null, null],
      ['message_stop', null, null],
    ]);
    expect(e.result.content[0]).toEqual({ type: 'tool_use', id: 'toolu_call_0', name: 'now', input: {} });
  });

  it('lets explicit {} go early', () => {
    const e = enc();
    e.open(START);
    e.push(start(0, 'now'));
    e.push(args(0, '{}'));
    expect(json(e.push(end(0))).map((x) => x.event)).toEqual(['content_block_stop']);
  });

  it('warns once and sends nothing when argument text arrives after a block closed', () => {
    const warnings: string[] = [];
    const e = enc(warnings);
    e.open(START);
    e.push(start(0, 'ls'));
    e.push(args(0, '{"p":1}'));
    e.push(end(0));
    expect(e.push(args(0, 'SECRET'))).toBe('');
    expect(e.push(args(0, 'MORE'))).toBe('');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).not.toContain('SECRET');
  });

  it('never sends a duplicate block, and an unconfirmed call does not make stop_reason tool_use', () => {
    const e = enc();
    const out = json(frames(e, [start(0, 'ls'), start(0, 'ls'), args(0, '{"p"'), content('<tool_call>{"name": "ls", "p"')]).join(''));
    expect(out.filter((x) => x.event === 'content_block_start')).toHaveLength(2);
    expect(out.filter((x) => x.event === 'content_block_stop')).toHaveLength(2);
    expect(out.find((x) => x.event === 'message_delta')!.data.delta.stop_reason).toBe('end_turn');
    expect(e.result.content).toEqual([{ type: 'text', text: '<tool_call>{"name": "ls", "p"' }]);
  });

  it('opens no text block for whitespace alone, and keeps it when text follows', () => {
    const e = enc();
    const out = json(frames(e, [start(0, 'ls'), args(0, '{}'), end(0), content('\n'), start(1, 'ls'), args(1, '{}'), end(1), content('\n'), content('ok')]).join(''));
    const starts = out.filter((x) => x.event === 'content_block_start').map((x) => x.data.content_block.type);
    expect(starts).toEqual(['tool_use', 'tool_use', 'text']);
    expect(e.result.content.at(-1)).toEqual({ type: 'text', text: '\nok' });
  });

  // Anthropic's streaming reference: a thinking block's signature arrives in a signature_delta
  // just before its content_block_stop.
  it('streams reasoning as a thinking block that ends with a signature_delta, the signature of the finished block', () => {
    const e = enc();
    const out = json(frames(e, [{ type: 'reasoning', text: 'hm' }, { type: 'reasoning', text: 'm' }, content('ok')]).join(''));
    expect(out.slice(2, 7).map((x) => [x.event, x.data.index ?? null, x.data.delta?.type ?? null])).toEqual([
      ['content_block_start', 0, null],
      ['content_block_delta', 0, 'thinking_delta'],
      ['content_block_delta', 0, 'thinking_delta'],
      ['content_block_delta', 0, 'signature_delta'],
      ['content_block_stop', 0, null],
    ]);
    expect(out[2]!.data.content_block).toEqual({ type: 'thinking', thinking: '', signature: '' });
    const signature = out[5]!.data.delta.signature;
    expect(signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(unsealReasoning(signature)).toBe('hmm');
    expect(e.result.content[0]).toEqual({ type: 'thinking', thinking: 'hmm', signature });
  });

  it('sends thinking shown "omitted" as a block with no text and the signature that holds it', () => {
    const e = new AnthropicMessagesEncoder({ id: 'msg_1', model: 'm', logger: silentLogger(), omitThinking: true });
    const out = json(frames(e, [{ type: 'reasoning', text: 'secret plan' }, content('ok')]).join(''));
    const thinking = out.filter((x) => x.data.index === 0);
    expect(thinking.map((x) => x.data.delta?.type ?? x.event)).toEqual(['content_block_start', 'signature_delta', 'content_block_stop']);
    expect(JSON.stringify(out)).not.toContain('secret plan');
    expect(e.result.content[0]).toMatchObject({ type: 'thinking', thinking: '' });
    expect(unsealReasoning((e.result.content[0] as { signature: string }).signature)).toBe('secret plan');
  });
});

describe('ResponsesEncoder', () => {
  const response = (): ResponseObject => ({
    id: 'resp_1', object: 'response', created_at: 1, status: 'in_progress', error: null, incomplete_details: null, output: [], usage: null,
  });

  it('streams each message segment and each call as its own item, and completes with exactly those items', () => {
    const e = new ResponsesEncoder(response(), silentLogger());
    const out = json(frames(e, [content('A'), start(0, 'ls', 'call_a'), args(0, '{"p":1}'), end(0), content('B')]).join(''));
    expect(out.map((x) => x.event)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.completed',
    ]);
    expect(out.map((x) => x.data.sequence_number)).toEqual(out.map((_, i) => i));
    expect(out.every((x) => x.event === x.data.type)).toBe(true);
    const added = out.filter((x) => x.event === 'response.output_item.added').map((x) => x.data.item);
    const doneItems = out.filter((x) => x.event === 'response.output_item.done').map((x) => x.data.item);
    const completed = out[out.length - 1]!.data.response;
    expect(completed.output).toEqual(doneItems);
    expect(added.map((i: any) => i.id)).toEqual(doneItems.map((i: any) => i.id));
    expect(doneItems.map((i: any) => i.id.split('_')[0])).toEqual(['msg', 'fc', 'msg']);
    expect(doneItems[1]).toMatchObject({ type: 'function_call', status: 'completed', call_id: 'call_a', name: 'ls', arguments: '{"p":1}' });
    expect(completed).toMatchObject({ status: 'completed', usage: { input_tokens: 10, output_tokens: 7, input_tokens_details: { cached_tokens: 4 } } });
    expect(e.calledTools).toBe(true);
  });

  it('opens no message item for whitespace alone', () => {
    const e = new ResponsesEncoder(response(), silentLogger());
    frames(e, [content('\n\n'), start(0, 'ls'), args(0, '{}'), end(0), content('\n')]);
    expect(e.response.output.map((i) => i.type)).toEqual(['function_call']);
  });

  // OpenAI's reference: an item's status is "incomplete" when the response was cut off.
  it('closes an unconfirmed call, and the item the token limit cut, as incomplete, and ends with response.incomplete', () => {
    const e = new ResponsesEncoder(response(), silentLogger());
    const out = json(frames(e, [start(0, 'ls'), args(0, '{"p"'), content('<tool_call>')], { ...DONE, finishReason: 'length' }).join(''));
    const doneItems = out.filter((x) => x.event === 'response.output_item.done').map((x) => x.data.item);
    expect(doneItems.map((i: any) => [i.type, i.status])).toEqual([['function_call', 'incomplete'], ['message', 'incomplete']]);
    expect(out.some((x) => x.event === 'response.function_call_arguments.done')).toBe(false);
    expect(out[out.length - 1]!.event).toBe('response.incomplete');
    expect(out[out.length - 1]!.data.response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(e.calledTools).toBe(false);
  });

  it('names its items after the response, so a stored item is found by its id alone', () => {
    const store = new ResponsesStore(2);
    const e = new ResponsesEncoder({ ...response(), id: 'resp_0123abcd' }, silentLogger(), { sealReasoning: true });
    frames(e, [{ type: 'reasoning', text: 'think' }, content('A'), start(0, 'ls', 'call_a'), args(0, '{}'), end(0)]);
    const ids = e.response.output.map((i) => i.id);
    expect(new Set(ids).size).toBe(3);
    store.set('resp_0123abcd', { response: e.response, conversation: [] });
    const find = storedItems(store);
    for (const [k, id] of ids.entries()) expect(find(id)).toEqual(e.response.output[k]);
    expect(e.response.output[0]).toMatchObject({ type: 'reasoning', status: 'completed', content: [{ type: 'reasoning_text', text: 'think' }] });
    expect(unsealReasoning((e.response.output[0] as { encrypted_content: string }).encrypted_content)).toBe('think');
    expect(find(ids[1]!.slice(0, -1) + '9')).toBeUndefined();
    store.set('resp_1', { response: response(), conversation: [] });
    store.set('resp_2', { response: response(), conversation: [] });
    expect(storedItems(store)(ids[1]!)).toBeUndefined();
  });
});

describe('tool ids and sealed reasoning', () => {
  it('renames kiln\'s tool-call ids to toolu_ ids of Anthropic\'s length and back, and leaves other ids alone', () => {
    const call = 'call_' + 'aB3'.repeat(8);
    expect(toAnthropicToolId(call)).toBe('toolu_' + 'aB3'.repeat(8));
    expect(fromAnthropicToolId(toAnthropicToolId(call))).toBe(call);
    expect(fromAnthropicToolId(toAnthropicToolId('Ab3De6Gh9'))).toBe('Ab3De6Gh9');
    // A real Anthropic id (23 characters after the prefix) passes unchanged.
    expect(fromAnthropicToolId('toolu_01A09q90qw90lq917835lq9')).toBe('toolu_01A09q90qw90lq917835lq9');
  });

  it('unseals what it sealed, and nothing another server issued', () => {
    const text = 'Let me think… ' + '\u{1F914}'.repeat(3);
    expect(unsealReasoning(sealReasoning(text))).toBe(text);
    expect(unsealReasoning(sealReasoning(''))).toBe('');
    expect(unsealReasoning('EqQBCkgIBhABGAIiQL3Uj2rc9aPnWd4v')).toBeNull();
    expect(unsealReasoning('')).toBeNull();
    expect(unsealReasoning('not base64 at all!')).toBeNull();
  });
});

describe('ReplyAccumulator', () => {
  it('keeps content, reasoning and the confirmed calls in index order', () => {
    const acc = new ReplyAccumulator();
    for (const ev of [content('a'), { type: 'reasoning', text: 'r' } as ToolCallEvent, start(1, 'x'), args(1, '{}'), start(0, 'y'), args(0, '{"q":1}'), end(0), end(1), start(2, 'z')]) {
      acc.push(ev);
    }
    expect(acc.content).toBe('a');
    expect(acc.reasoning).toBe('r');
    expect(acc.toolCalls.map((c) => [c.index, c.name, c.arguments])).toEqual([[0, 'y', '{"q":1}'], [1, 'x', '{}']]);
  });
});
