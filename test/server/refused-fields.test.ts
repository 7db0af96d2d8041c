// Request fields that change what the reply means and that kiln does not implement are refused
// with a 400 naming them, on each protocol; the fields clients send by default that only tune
// cost, routing or caching are accepted. (The clients' own default bodies pass in the *-agents
// tests, which drive kiln with them.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ForcedServer, forcedServer, QWEN_ID as M } from './forced-replies.js';
import { postJson } from './helpers.js';

const USER = [{ role: 'user', content: 'hi' }];
const chat = (extra: object) => ({ model: M, messages: USER, max_tokens: 2, ...extra });
const responses = (extra: object) => ({ model: M, input: 'hi', max_output_tokens: 2, ...extra });
const messages = (extra: object) => ({ model: M, messages: USER, max_tokens: 2, ...extra });

type Row = [path: string, name: string, body: object, field: string];

const REFUSED: Row[] = [
  ['/v1/chat/completions', 'legacy functions', chat({ functions: [{ name: 'bash', parameters: { type: 'object' } }] }), 'functions'],
  ['/v1/chat/completions', 'legacy function_call by name', chat({ function_call: { name: 'bash' } }), 'function_call'],
  ['/v1/chat/completions', 'audio output', chat({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }), 'modalities'],
  ['/v1/chat/completions', 'audio settings alone', chat({ audio: { voice: 'alloy', format: 'wav' } }), 'audio'],
  ['/v1/chat/completions', 'web search', chat({ web_search_options: {} }), 'web_search_options'],
  ['/v1/chat/completions', 'moderation', chat({ moderation: { model: 'omni-moderation-latest' } }), 'moderation'],
  ['/v1/responses', 'background', responses({ background: true }), 'background'],
  ['/v1/responses', 'a conversation id', responses({ conversation: 'conv_123' }), 'conversation'],
  ['/v1/responses', 'a prompt template', responses({ prompt: { id: 'pmpt_123' } }), 'prompt'],
  ['/v1/responses', 'compaction', responses({ context_management: [{ type: 'compaction' }] }), 'context_management'],
  ['/v1/responses', 'truncation auto', responses({ truncation: 'auto' }), 'truncation'],
  ['/v1/responses', 'log-probabilities', responses({ include: ['message.output_text.logprobs'], top_logprobs: 3 }), 'include'],
  ['/v1/responses', 'top_logprobs alone', responses({ top_logprobs: 3 }), 'top_logprobs'],
  ['/v1/responses', 'moderation', responses({ moderation: { model: 'omni-moderation-latest' } }), 'moderation'],
  ['/v1/messages', 'a code execution container', messages({ container: 'container_123' }), 'container'],
  ['/v1/messages', 'context editing', messages({ context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } }), 'context_management'],
  ['/v1/messages', 'compaction', messages({ compaction: { type: 'compaction' } }), 'compaction'],
  ['/v1/messages', 'MCP servers', messages({ mcp_servers: [{ type: 'url', url: 'https://example.com', name: 'x' }] }), 'mcp_servers'],
];

/** Requests whose meaning kiln does not implement, though no field names it. */
const REFUSED_SHAPES: Row[] = [
  ['/v1/messages', 'prefill (a final assistant message)', messages({ messages: [...USER, { role: 'assistant', content: 'Once upon' }] }), 'messages[1].role'],
];

/** What clients send that asks for nothing kiln would leave undone. */
const ACCEPTED: [path: string, body: object][] = [
  ['/v1/chat/completions', chat({
    user: 'u1', metadata: { run: '1' }, store: true, service_tier: 'auto', prompt_cache_key: 'k', prompt_cache_retention: '24h', safety_identifier: 's',
    stream_options: null, verbosity: 'low', reasoning_effort: 'low', prediction: { type: 'content', content: 'hello' }, parallel_tool_calls: true,
    modalities: ['text'], function_call: 'auto', functions: [], web_search_options: null,
  })],
  ['/v1/responses', responses({
    user: 'u1', metadata: { run: '1' }, store: false, service_tier: 'auto', prompt_cache_key: 'k', safety_identifier: 's', max_tool_calls: 5,
    include: ['reasoning.encrypted_content', 'file_search_call.results'], truncation: 'disabled', text: { format: { type: 'text' }, verbosity: 'low' },
    reasoning: { effort: 'low', summary: 'auto' }, parallel_tool_calls: true, background: false, top_logprobs: 0, conversation: null,
  })],
  ['/v1/messages', messages({
    metadata: { user_id: 'u1' }, service_tier: 'auto', cache_control: { type: 'ephemeral' }, inference_geo: 'us', diagnostics: {},
    output_config: { effort: 'high' }, container: null, mcp_servers: [], thinking: { type: 'disabled' },
  })],
  // Structured output is implemented (see structured-output.test.ts).
  ['/v1/messages', messages({ output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } })],
  ['/v1/messages', messages({ output_format: { type: 'json_schema', schema: { type: 'object' } } })],
];

let q: ForcedServer;
beforeAll(async () => {
  q = await forcedServer('qwen3.jinja');
  q.say('Hi.');
});
afterAll(async () => q?.s.close());

describe('request fields kiln does not implement', () => {
  for (const [path, name, body, field] of REFUSED) {
    it(`${path}: ${name} is a 400 naming '${field}'`, async () => {
      const res = await postJson(`${q.s.url}${path}`, body);
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { message: string; param?: string; type: string } };
      expect(json.error.message).toContain(`'${field}' is not supported by this server`);
      if (path !== '/v1/messages') expect(json.error.param).toBe(field);
      else expect(json.error.type).toBe('invalid_request_error');
    });
  }

  for (const [path, name, body, field] of REFUSED_SHAPES) {
    it(`${path}: ${name} is a 400 naming '${field}'`, async () => {
      const res = await postJson(`${q.s.url}${path}`, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(`'${field}'`);
    });
  }

  for (const [path, body] of ACCEPTED) {
    it(`${path}: the fields clients send for cost, routing and caching are accepted`, async () => {
      const res = await postJson(`${q.s.url}${path}`, body);
      expect(await res.text()).toMatch(/^\{"id":/);
      expect(res.status).toBe(200);
    });
  }

  // The shape the SDK's thread helper reads (ThreadState.recoversFrom): error.details.error_code
  // "thread_unsupported_request" and the `unsupported` list.
  it('/v1/messages: thread is refused with thread_unsupported_request details', async () => {
    for (const thread of [{ type: 'create' }, { type: 'continue', previous_message_id: 'msg_1' }]) {
      const res = await postJson(`${q.s.url}/v1/messages`, messages({ thread }), { 'anthropic-beta': 'message-threads-2026-08-12' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringContaining('thread'), details: { error_code: 'thread_unsupported_request', unsupported: ['thread'] } },
      });
    }
  });
});
