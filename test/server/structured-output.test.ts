// Structured output through the real server, driven by the official SDKs, on tiny random-weight
// models with the Qwen3 (thinking on and off) and Llama 3 vocabularies and templates: Chat
// Completions `response_format`, Responses `text.format` and Anthropic `output_config.format`
// (and the beta `output_format`), streamed and not, give text that validates (ajv); strict
// function tools under a required choice give arguments that validate; an unsupported keyword
// is each protocol's 400.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedTemplate, writeTinyChatModel } from '../fixtures/chat/tiny-chat-model.js';
import { jsonValidator } from '../helpers/json-validator.js';
import { type Running, startServer } from './helpers.js';

const ajv = jsonValidator();
const SCHEMA = {
  type: 'object',
  properties: {
    label: { type: 'string', enum: ['spam', 'ham'] },
    score: { type: 'number', minimum: 0, maximum: 1 },
    words: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 2 },
    note: { type: ['string', 'null'], maxLength: 10 },
  },
  required: ['label', 'score', 'words', 'note'],
  additionalProperties: false,
};
const ARGS = { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 5 } }, required: ['city', 'days'], additionalProperties: false };
const MAX = 2000;

function validates(schema: object, text: string): void {
  if (!ajv.validate(schema, JSON.parse(text) as unknown)) throw new Error(`${text} does not validate: ${ajv.errorsText()}`);
}

const CASES = [
  { family: 'qwen3', template: 'qwen3.jinja', thinking: false },
  { family: 'qwen3', template: 'qwen3.jinja', thinking: true },
  { family: 'llama3', template: 'llama3.1.jinja', thinking: false },
] as const;

describe.each(CASES)('$family (thinking $thinking)', ({ family, template, thinking }) => {
  let s: Running;
  let openai: OpenAI;
  let anthropic: Anthropic;
  beforeAll(async () => {
    s = await startServer({ model: writeTinyChatModel(family, sharedTemplate(template)), contextSize: 4096 }, { modelId: 'm' });
    openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 });
  });
  afterAll(() => s?.close());
  const messages = [{ role: 'user' as const, content: 'Classify: win a free phone' }];
  // A random model that opens <think> may never close it: where the protocol has logit_bias, a
  // push toward `</think>` ends its thinking soon (the mask still decides where it may appear).
  let kwargs: Record<string, unknown> = {};
  beforeAll(() => {
    const close = s.runtime.tokenize('</think>', { addBos: false, parseSpecial: true });
    const bias = close.length === 1 ? { logit_bias: { [close[0]!]: 10 } } : {};
    kwargs = { chat_template_kwargs: { enable_thinking: thinking }, ...bias };
  });

  it('Chat Completions response_format json_schema, streamed and not', async () => {
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'label', schema: SCHEMA, strict: true } };
    const r = await openai.chat.completions.create({ model: 'm', messages, response_format, max_tokens: MAX, temperature: 1, seed: 1, ...kwargs } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]!.finish_reason).toBe('stop');
    validates(SCHEMA, r.choices[0]!.message.content!);
    const stream = await openai.chat.completions.create({ model: 'm', messages, response_format, max_tokens: MAX, temperature: 1, seed: 2, stream: true, ...kwargs } as OpenAI.ChatCompletionCreateParamsStreaming);
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    validates(SCHEMA, text);
  });

  it('Chat Completions json_object', async () => {
    const r = await openai.chat.completions.create({ model: 'm', messages, response_format: { type: 'json_object' }, max_tokens: 5, temperature: 1, seed: 3, chat_template_kwargs: { enable_thinking: false } } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]!.message.content!.trimStart().startsWith('{')).toBe(true);
  });

  it('Responses text.format json_schema, streamed and not', async () => {
    const text = { format: { type: 'json_schema' as const, name: 'label', schema: SCHEMA, strict: true } };
    const r = await openai.responses.create({ model: 'm', input: 'Classify: win a free phone', text, max_output_tokens: MAX, temperature: 1, seed: 4, ...kwargs } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    validates(SCHEMA, r.output_text);
    const stream = await openai.responses.create({ model: 'm', input: 'Classify: win a free phone', text, max_output_tokens: MAX, temperature: 1, seed: 5, stream: true, ...kwargs } as OpenAI.Responses.ResponseCreateParamsStreaming);
    let out = '';
    for await (const e of stream) if (e.type === 'response.output_text.delta') out += e.delta;
    validates(SCHEMA, out);
  });

  it('Anthropic output_config.format and the beta output_format, streamed and not', async () => {
    // No logit_bias in this protocol (nor a seed): greedy decoding, so the reply is one fixed text.
    const extra = { temperature: 0, thinking: thinking ? { type: 'enabled' as const, budget_tokens: 1024 } : { type: 'disabled' as const } };
    const r = await anthropic.messages.create({ model: 'm', max_tokens: MAX, messages, output_config: { format: { type: 'json_schema', schema: SCHEMA } }, ...extra });
    const textOf = (content: Anthropic.ContentBlock[]) => content.filter((b) => b.type === 'text').map((b) => (b as Anthropic.TextBlock).text).join('');
    validates(SCHEMA, textOf(r.content));
    let out = '';
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: MAX, messages, output_config: { format: { type: 'json_schema', schema: SCHEMA } }, ...extra });
    for await (const e of stream) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') out += e.delta.text;
    validates(SCHEMA, out);
    const beta = await anthropic.beta.messages.create({ model: 'm', max_tokens: MAX, messages, output_format: { type: 'json_schema', schema: SCHEMA }, ...extra });
    validates(SCHEMA, beta.content.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join(''));
  });

  it('strict tools under a required choice: arguments validate on every endpoint', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'weather', parameters: ARGS, strict: true } }];
    const r = await openai.chat.completions.create({ model: 'm', messages, tools, tool_choice: 'required', parallel_tool_calls: false, max_tokens: MAX, temperature: 1, seed: 6, ...kwargs } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(r.choices[0]!.finish_reason).toBe('tool_calls');
    const call = r.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    validates(ARGS, call.function.arguments);
    expect(r.choices[0]!.message.content ?? '').not.toMatch(/tool_call|"name"/);

    const resp = await openai.responses.create({ model: 'm', input: 'weather?', tools: [{ type: 'function', name: 'weather', parameters: ARGS, strict: true }], tool_choice: 'required', parallel_tool_calls: false, max_output_tokens: MAX, temperature: 1, seed: 7, ...kwargs } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const fc = resp.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    validates(ARGS, fc.arguments);

    const m = await anthropic.messages.create({ model: 'm', max_tokens: MAX, messages, temperature: 0, tools: [{ name: 'weather', input_schema: ARGS as Anthropic.Tool.InputSchema, strict: true }], tool_choice: { type: 'any', disable_parallel_tool_use: true }, thinking: { type: 'disabled' } } as Anthropic.MessageCreateParamsNonStreaming);
    expect(m.stop_reason).toBe('tool_use');
    const use = m.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(ajv.validate(ARGS, use.input)).toBe(true);
  });

  it('an unsupported keyword is a 400 naming it, on every endpoint', async () => {
    const schema = { type: 'object', properties: { a: { not: { type: 'string' } } } };
    const e1 = await openai.chat.completions.create({ model: 'm', messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }).catch((e: unknown) => e);
    expect(e1).toMatchObject({ status: 400 });
    expect(String((e1 as Error).message)).toMatch(/'not' at '\/properties\/a'/);
    const e2 = await openai.responses.create({ model: 'm', input: 'x', text: { format: { type: 'json_schema', name: 'x', schema } } }).catch((e: unknown) => e);
    expect(e2).toMatchObject({ status: 400 });
    const e3 = await anthropic.messages.create({ model: 'm', max_tokens: 5, messages, output_config: { format: { type: 'json_schema', schema } } }).catch((e: unknown) => e);
    expect(e3).toMatchObject({ status: 400 });
    expect(String((e3 as Error).message)).toMatch(/'not' at '\/properties\/a'/);
  });
});
