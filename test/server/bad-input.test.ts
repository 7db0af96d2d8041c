// Malformed requests on every endpoint: each gets the right status and the protocol's error body
// (naming the field where there is one, never a stack trace), and the server keeps serving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, parseSse, postJson, startServer } from './helpers.js';

interface Case {
  name: string;
  path: string;
  body: unknown;
  status: number;
  /** OpenAI `code` (or Anthropic `error.type` on /v1/messages). */
  code?: string;
  param?: string;
  /** Text the message must contain. */
  says?: string;
  raw?: boolean;
}

const M = 'stories260K';
const USER = [{ role: 'user', content: 'hi' }];
const chat = (extra: object) => ({ model: M, messages: USER, ...extra });
const bashTool = { type: 'function', function: { name: 'bash', parameters: { type: 'object' } } };
const anth = (extra: object) => ({ model: M, max_tokens: 16, messages: USER, ...extra });

const CASES: Case[] = [
  { name: 'truncated JSON', path: '/v1/chat/completions', body: '{"model": "stories260K", "messages": [', raw: true, status: 400, code: 'invalid_json' },
  { name: 'not JSON at all', path: '/v1/chat/completions', body: 'hello', raw: true, status: 400, code: 'invalid_json' },
  { name: 'invalid UTF-8', path: '/v1/chat/completions', body: Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), raw: true, status: 400, code: 'invalid_utf8' },
  { name: 'empty body', path: '/v1/chat/completions', body: '', raw: true, status: 400, code: 'invalid_argument' },
  { name: 'body is an array', path: '/v1/chat/completions', body: [], status: 400, says: 'JSON object' },
  { name: 'missing model', path: '/v1/chat/completions', body: { messages: USER }, status: 400, param: 'model' },
  { name: 'unknown model', path: '/v1/chat/completions', body: { ...chat({}), model: 'gpt-9' }, status: 404, code: 'model_not_found', param: 'model' },
  { name: 'missing messages', path: '/v1/chat/completions', body: { model: M }, status: 400, param: 'messages' },
  { name: 'messages is a string', path: '/v1/chat/completions', body: chat({ messages: 'hi' }), status: 400, param: 'messages' },
  { name: 'messages empty', path: '/v1/chat/completions', body: chat({ messages: [] }), status: 400, param: 'messages' },
  { name: 'unknown role', path: '/v1/chat/completions', body: chat({ messages: [{ role: 'wizard', content: 'x' }] }), status: 400, param: 'messages[0].role' },
  { name: 'content is a number', path: '/v1/chat/completions', body: chat({ messages: [{ role: 'user', content: 42 }] }), status: 400, param: 'messages[0].content' },
  { name: 'image content part', path: '/v1/chat/completions', body: chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }), status: 400, param: 'messages[0].content[0].type' },
  { name: 'tool message without tool_call_id', path: '/v1/chat/completions', body: chat({ messages: [...USER, { role: 'tool', content: 'r' }] }), status: 400, param: 'messages[1].tool_call_id' },
  { name: 'tool call arguments not a string', path: '/v1/chat/completions', body: chat({ messages: [...USER, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'bash', arguments: { a: 1 } } }] }] }), status: 400, param: 'messages[1].tool_calls[0].function.arguments' },
  { name: 'temperature is a string', path: '/v1/chat/completions', body: chat({ temperature: 'hot' }), status: 400, param: 'temperature' },
  { name: 'temperature out of range', path: '/v1/chat/completions', body: chat({ temperature: 5 }), status: 400, param: 'temperature' },
  { name: 'negative top_p', path: '/v1/chat/completions', body: chat({ top_p: -1 }), status: 400, param: 'top_p' },
  { name: 'negative max_tokens', path: '/v1/chat/completions', body: chat({ max_tokens: -5 }), status: 400, param: 'max_tokens' },
  { name: 'huge max_tokens', path: '/v1/chat/completions', body: chat({ max_tokens: 1e20 }), status: 400, param: 'max_tokens' },
  { name: 'fractional max_completion_tokens', path: '/v1/chat/completions', body: chat({ max_completion_tokens: 1.5 }), status: 400, param: 'max_completion_tokens' },
  { name: 'n = 3', path: '/v1/chat/completions', body: chat({ n: 3 }), status: 400, param: 'n' },
  { name: 'stream is a string', path: '/v1/chat/completions', body: chat({ stream: 'yes' }), status: 400, param: 'stream' },
  { name: 'include_usage not a boolean', path: '/v1/chat/completions', body: chat({ stream: true, stream_options: { include_usage: 'x' } }), status: 400, param: 'stream_options.include_usage' },
  { name: 'tools is an object', path: '/v1/chat/completions', body: chat({ tools: bashTool }), status: 400, param: 'tools' },
  { name: 'tool without a name', path: '/v1/chat/completions', body: chat({ tools: [{ type: 'function', function: {} }] }), status: 400, param: 'tools[0].function.name' },
  { name: 'tool declared twice', path: '/v1/chat/completions', body: chat({ tools: [bashTool, bashTool] }), status: 400, param: 'tools' },
  { name: 'tool_choice names an unknown tool', path: '/v1/chat/completions', body: chat({ tools: [bashTool], tool_choice: { type: 'function', function: { name: 'rm' } } }), status: 400, param: 'tool_choice', says: "'rm'" },
  { name: 'tool_choice unknown word', path: '/v1/chat/completions', body: chat({ tool_choice: 'sometimes' }), status: 400, param: 'tool_choice' },
  { name: 'tool_choice required without tools', path: '/v1/chat/completions', body: chat({ tool_choice: 'required' }), status: 400, param: 'tool_choice' },
  { name: 'stop with numbers', path: '/v1/chat/completions', body: chat({ stop: [1, 2] }), status: 400, param: 'stop' },
  { name: 'logit_bias key not a token', path: '/v1/chat/completions', body: chat({ logit_bias: { hello: 1 } }), status: 400, param: 'logit_bias' },
  { name: 'logit_bias token beyond the vocabulary', path: '/v1/chat/completions', body: chat({ logit_bias: { 99999: 1 } }), status: 400, param: 'logit_bias' },
  { name: 'logit_bias value too large', path: '/v1/chat/completions', body: chat({ logit_bias: { 5: 1000 } }), status: 400, param: 'logit_bias.5' },
  { name: 'seed is a string', path: '/v1/chat/completions', body: chat({ seed: 'abc' }), status: 400, param: 'seed' },
  { name: 'structured output without its schema', path: '/v1/chat/completions', body: chat({ response_format: { type: 'json_schema' } }), status: 400, param: 'response_format.json_schema' },
  { name: 'structured output with a keyword kiln cannot enforce', path: '/v1/chat/completions', body: chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }), status: 400, param: 'response_format.json_schema.schema', says: "'uniqueItems' at '/'" },
  { name: 'completions: no prompt', path: '/v1/completions', body: { model: M }, status: 400, param: 'prompt' },
  { name: 'completions: token id out of range', path: '/v1/completions', body: { model: M, prompt: [1, 2, 100000] }, status: 400, param: 'prompt' },
  { name: 'completions: prompt longer than the context', path: '/v1/completions', body: { model: M, prompt: 'Once upon a time '.repeat(200) }, status: 400, code: 'context_length_exceeded', says: 'the context holds 512' },
  { name: 'completions: n = 2', path: '/v1/completions', body: { model: M, prompt: 'x', n: 2 }, status: 400, param: 'n' },
  { name: 'completions: logprobs above 20', path: '/v1/completions', body: { model: M, prompt: 'x', logprobs: 21 }, status: 400, param: 'logprobs' },
  { name: 'completions: logprobs with echo', path: '/v1/completions', body: { model: M, prompt: 'x', logprobs: 1, echo: true }, status: 400, param: 'echo' },
  { name: 'top_logprobs without logprobs', path: '/v1/chat/completions', body: chat({ top_logprobs: 2 }), status: 400, param: 'top_logprobs' },
  { name: 'top_logprobs above 20', path: '/v1/chat/completions', body: chat({ logprobs: true, top_logprobs: 21 }), status: 400, param: 'top_logprobs' },
  { name: 'messages: malformed JSON', path: '/v1/messages', body: '{"model"', raw: true, status: 400, code: 'invalid_request_error' },
  { name: 'messages: unknown model', path: '/v1/messages', body: { ...anth({}), model: 'claude-9' }, status: 404, code: 'not_found_error' },
  { name: 'messages: missing max_tokens', path: '/v1/messages', body: { model: M, messages: USER }, status: 400, code: 'invalid_request_error', says: 'max_tokens' },
  { name: 'messages: max_tokens 0', path: '/v1/messages', body: anth({ max_tokens: 0 }), status: 400, says: 'max_tokens' },
  { name: 'messages: system role in messages', path: '/v1/messages', body: anth({ messages: [{ role: 'system', content: 'x' }] }), status: 400, says: 'messages[0].role' },
  { name: 'messages: image block', path: '/v1/messages', body: anth({ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }), status: 400, says: 'messages[0].content[0].type' },
  { name: 'messages: tool without input_schema', path: '/v1/messages', body: anth({ tools: [{ name: 'bash' }] }), status: 400, says: 'input_schema' },
  { name: 'messages: tool_choice names an unknown tool', path: '/v1/messages', body: anth({ tools: [{ name: 'bash', input_schema: { type: 'object' } }], tool_choice: { type: 'tool', name: 'rm' } }), status: 400, says: "'rm'" },
  { name: 'messages: temperature above 1', path: '/v1/messages', body: anth({ temperature: 1.5 }), status: 400, says: 'temperature' },
  { name: 'messages: tool_result from the assistant', path: '/v1/messages', body: anth({ messages: [...USER, { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'r' }] }] }), status: 400, says: 'messages[1].content[0].type' },
  { name: 'responses: unknown item type', path: '/v1/responses', body: { model: M, input: [{ type: 'image_generation_call' }] }, status: 400, param: 'input[0].type' },
  { name: 'responses: unknown previous_response_id', path: '/v1/responses', body: { model: M, input: 'hi', previous_response_id: 'resp_nope' }, status: 404, code: 'previous_response_not_found' },
  { name: 'responses: hosted tool', path: '/v1/responses', body: { model: M, input: 'hi', tools: [{ type: 'web_search' }] }, status: 400, param: 'tools[0].type' },
  { name: 'responses: negative max_output_tokens', path: '/v1/responses', body: { model: M, input: 'hi', max_output_tokens: -1 }, status: 400, param: 'max_output_tokens' },
  { name: 'responses: input is a number', path: '/v1/responses', body: { model: M, input: 7 }, status: 400, param: 'input' },
  { name: 'unknown route', path: '/v1/embeddings', body: {}, status: 404, code: 'not_found' },
];

let s: Running;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => s?.close());

describe('bad input', () => {
  it(`has at least 30 cases (${CASES.length})`, () => {
    expect(CASES.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of CASES) {
    it(`${c.path}: ${c.name} -> ${c.status}`, async () => {
      const body = c.raw ? (c.body as string | Buffer) : JSON.stringify(c.body);
      const res = await fetch(`${s.url}${c.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(c.status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const json = (await res.json()) as any;
      const text = JSON.stringify(json);
      expect(text).not.toMatch(/\n\s+at |\.ts:\d+/);
      if (c.path === '/v1/messages') {
        expect(Object.keys(json).sort()).toEqual(['error', 'type']);
        expect(json.type).toBe('error');
        expect(Object.keys(json.error).sort()).toEqual(['message', 'type']);
        if (c.code) expect(json.error.type).toBe(c.code);
        else expect(json.error.type).toBe(c.status === 404 ? 'not_found_error' : 'invalid_request_error');
        if (c.says) expect(json.error.message).toContain(c.says);
      } else {
        expect(Object.keys(json)).toEqual(['error']);
        expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
        expect(json.error.message.length).toBeGreaterThan(10);
        expect(json.error.type).toBe('invalid_request_error');
        if (c.code) expect(json.error.code).toBe(c.code);
        if (c.param) expect(json.error.param).toBe(c.param);
        if (c.says) expect(json.error.message).toContain(c.says);
      }
    });
  }

  it('does not disturb a stream running meanwhile, and keeps serving', async () => {
    const good = { model: M, prompt: 'Once upon a time', max_tokens: 120, temperature: 0 };
    const alone = (await (await postJson(`${s.url}/v1/completions`, good)).json()).choices[0].text;
    const streaming = postJson(`${s.url}/v1/completions`, { ...good, stream: true }).then((r) => r.text());
    const bad = await Promise.all(CASES.map((c) => fetch(`${s.url}${c.path}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: c.raw ? (c.body as string | Buffer) : JSON.stringify(c.body),
    }).then((r) => r.status)));
    expect(bad).toEqual(CASES.map((c) => c.status));
    const text = parseSse(await streaming)
      .filter((e) => e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data).choices[0].text)
      .join('');
    expect(text).toBe(alone);
  });
});
