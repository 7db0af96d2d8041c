// Structured output on tiny random-weight models with real vocabularies and chat templates (Qwen3
// with thinking on and off, Llama 3): whatever such a model would write, under a schema the text
// it produces validates (checked with ajv), through complete() and chat(), streamed and not; a
// required or named tool choice returns a call whose arguments validate and no markup in content;
// strict tools are constrained from where their arguments begin; a forced call cut off by
// maxTokens ends with finish reason 'length' and the call as streamed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Runtime, UnsupportedSchemaError, type ChatMessage, type ChatStreamEvent, type OpenAITool } from '../../src/index.js';
import { sharedTemplate, writeTinyChatModel } from '../fixtures/chat/tiny-chat-model.js';
import { jsonValidator } from '../helpers/json-validator.js';

const ajv = jsonValidator();

const CLASSIFY = {
  type: 'object',
  properties: {
    sentiment: { type: 'string', enum: ['positive', 'negative', 'neutral'] },
    confidence: { type: 'number', minimum: 0, maximum: 1 },
    aspects: { type: 'array', items: { type: 'string', maxLength: 12 }, maxItems: 3 },
    id: { type: 'string', format: 'uuid' },
    at: { type: 'string', format: 'date' },
  },
  required: ['sentiment', 'confidence', 'aspects', 'id'],
  additionalProperties: false,
};
const WEATHER_ARGS = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 20 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};
const TOOLS: OpenAITool[] = [
  { type: 'function', function: { name: 'get_weather', parameters: WEATHER_ARGS } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string', maxLength: 16 } }, required: ['q'], additionalProperties: false } } },
];
const USER: ChatMessage[] = [{ role: 'user', content: 'Classify: the soup was great.' }];
const SEEDS = [1, 2, 3];

function validates(schema: object, text: string): void {
  const value = JSON.parse(text) as unknown;
  const ok = ajv.validate(schema, value);
  if (!ok) throw new Error(`${text} does not validate: ${ajv.errorsText()}`);
}

describe.each([
  ['qwen3', 'qwen3.jinja'],
  ['llama3', 'llama3.1.jinja'],
] as const)('%s vocabulary', (family, template) => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await Runtime.load({ model: writeTinyChatModel(family, sharedTemplate(template)), threads: 1, contextSize: 4096 });
  });
  afterAll(() => rt?.close());

  it('complete() with a JSON Schema grammar always yields text that validates, and stops when it is complete', async () => {
    for (const seed of SEEDS) {
      const r = await rt.complete({ prompt: 'JSON:', grammar: { jsonSchema: CLASSIFY }, maxTokens: 3000, temperature: 1, seed });
      expect(r.finishReason).toBe('stop');
      validates(CLASSIFY, r.text);
    }
  });

  it('complete() with a regex and a GBNF grammar', async () => {
    const r = await rt.complete({ prompt: 'x', grammar: { regex: '(yes|no), [0-9]{2}' }, maxTokens: 50, temperature: 1, seed: 4 });
    expect(r.text).toMatch(/^(yes|no), [0-9]{2}$/);
    const g = await rt.complete({ prompt: 'x', grammar: { gbnf: 'root ::= "(" item ("," item)* ")"\nitem ::= [a-c]{1,3}' }, maxTokens: 200, temperature: 1, seed: 5 });
    expect(g.text).toMatch(/^\([a-c]{1,3}(,[a-c]{1,3})*\)$/);
  });

  it('chat() and chatStream() with a json_schema response format validate, streamed content equal to the result', async () => {
    for (const seed of SEEDS) {
      const responseFormat = { type: 'json_schema' as const, schema: CLASSIFY, strict: true };
      const r = await rt.chat({ messages: USER, responseFormat, maxTokens: 3000, temperature: 1, seed, enableThinking: false });
      expect(r.finishReason).toBe('stop');
      validates(CLASSIFY, r.message.content);
      let content = '';
      let done: ChatStreamEvent | undefined;
      for await (const e of rt.chatStream({ messages: USER, responseFormat, maxTokens: 3000, temperature: 1, seed, enableThinking: false })) {
        if (e.type === 'content') content += e.text;
        if (e.type === 'done') done = e;
      }
      expect(done?.type === 'done' && done.result.message.content).toBe(content);
      expect(content).toBe(r.message.content);
    }
  });

  it('json_object gives an object, even when the model is pushed toward closing characters everywhere', async () => {
    // Without a schema a random model could nest and write forever; biasing `}`, `]` and `"` up
    // makes it close early, and only the mask keeps those where JSON allows them.
    const logitBias: Record<number, number> = {};
    for (const text of ['}', ']', '"', '}}', '"}', '"]']) {
      const ids = rt.tokenize(text, { addBos: false });
      if (ids.length === 1) logitBias[ids[0]!] = 8;
    }
    for (const seed of SEEDS) {
      const r = await rt.chat({ messages: USER, responseFormat: { type: 'json_object' }, maxTokens: 3000, temperature: 1, seed, logitBias, enableThinking: false });
      expect(r.finishReason).toBe('stop');
      const value = JSON.parse(r.message.content) as unknown;
      expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
    }
  });

  it('a required or named tool choice returns a call whose arguments validate, and no markup in content', async () => {
    for (const seed of SEEDS) {
      for (const toolChoice of ['required', { type: 'function', function: { name: 'get_weather' } }] as const) {
        const r = await rt.chat({ messages: USER, tools: TOOLS, toolChoice, maxTokens: 2000, temperature: 1, seed, enableThinking: false, parallelToolCalls: false });
        expect(r.finishReason).toBe('tool_calls');
        const call = r.message.toolCalls![0]!;
        if (typeof toolChoice === 'object') expect(call.function.name).toBe('get_weather');
        const tool = TOOLS.find((t) => t.function.name === call.function.name)!;
        validates(tool.function.parameters!, call.function.arguments as string);
        expect(r.message.content).not.toMatch(/tool_call|"name"|<\||\{/);
      }
    }
  });

  it('a forced call cut off by maxTokens ends with length and the call as streamed', async () => {
    const events: ChatStreamEvent[] = [];
    for await (const e of rt.chatStream({ messages: USER, tools: TOOLS, toolChoice: { type: 'function', function: { name: 'get_weather' } }, maxTokens: 20, temperature: 1, seed: 1, enableThinking: false })) events.push(e);
    const done = events.at(-1)!;
    if (done.type !== 'done') throw new Error('no done');
    expect(done.result.finishReason).toBe('length');
    expect(done.result.message.content).toBe('');
    const calls = done.result.message.toolCalls!;
    expect(calls).toHaveLength(1);
    const streamed = events.filter((e) => e.type === 'tool_call_arguments').map((e) => (e as { delta: string }).delta).join('');
    expect(calls[0]!.function.arguments).toBe(streamed);
    expect(events.some((e) => e.type === 'content')).toBe(false);
  });

  it('an unsupported keyword is a typed error naming it, the path and the field', async () => {
    const schema = { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } };
    const err = await rt.chat({ messages: USER, responseFormat: { type: 'json_schema', schema } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedSchemaError);
    expect(err).toMatchObject({ keyword: 'uniqueItems', pointer: '/properties/tags', param: 'responseFormat.schema', status: 400 });
    const strict: OpenAITool = { type: 'function', function: { name: 'f', strict: true, parameters: schema } };
    const err2 = await rt.chat({ messages: USER, tools: [strict] }).catch((e: unknown) => e);
    expect(err2).toMatchObject({ keyword: 'uniqueItems', param: 'tools[0].function.parameters' });
  });
});

describe('Qwen3 with thinking', () => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await Runtime.load({ model: writeTinyChatModel('qwen3', sharedTemplate('qwen3.jinja')), threads: 1, contextSize: 4096 });
  });
  afterAll(() => rt?.close());
  const script = (text: string) => rt.tokenize(text, { addBos: false, parseSpecial: true });

  it('the schema applies after </think>; the reasoning stays free', async () => {
    for (const seed of SEEDS) {
      const thinking = script('<think>\nThe user wants { a classification }.\n</think>\n\n');
      const r = await rt.chat({ messages: USER, responseFormat: { type: 'json_schema', schema: CLASSIFY }, forcedTokens: thinking, maxTokens: 3000, temperature: 1, seed, enableThinking: true });
      expect(r.message.reasoning).toBe('\nThe user wants { a classification }.\n');
      validates(CLASSIFY, r.message.content);
    }
  });

  it('a forced call follows the thinking', async () => {
    const thinking = script('<think>\nCall it.\n</think>\n\n');
    const r = await rt.chat({ messages: USER, tools: TOOLS, toolChoice: 'required', forcedTokens: thinking, maxTokens: 2000, temperature: 1, seed: 2, enableThinking: true, parallelToolCalls: false });
    expect(r.finishReason).toBe('tool_calls');
    expect(r.message.reasoning).toBe('\nCall it.\n');
    const call = r.message.toolCalls![0]!;
    validates(TOOLS.find((t) => t.function.name === call.function.name)!.function.parameters!, call.function.arguments as string);
  });

  it('a strict tool is constrained from where the model begins its arguments', async () => {
    const strictTools: OpenAITool[] = TOOLS.map((t) => ({ type: 'function', function: { ...t.function, strict: true } }));
    for (const seed of SEEDS) {
      const opening = script('<tool_call>\n{"name": "get_weather", "arguments":');
      const r = await rt.chat({ messages: USER, tools: strictTools, forcedTokens: opening, maxTokens: 2000, temperature: 1, seed, enableThinking: false, parallelToolCalls: false });
      expect(r.finishReason).toBe('tool_calls');
      validates(WEATHER_ARGS, r.message.toolCalls![0]!.function.arguments as string);
    }
  });
});
