// The chat request every chat route builds from its protocol's body: OpenAI-shaped messages and
// tools (the chat layer's input), the tool choice, limits and sampling. Also the readers for the
// OpenAI shapes, shared by the routes.
import type { ChatMessage, ChatToolCall, ToolChoice } from '../chat/messages.js';
import { InvalidArgumentError, quote } from '../errors.js';
import type { ResponseFormat } from '../runtime/chat.js';
import type { SamplingOptions } from '../sampling/sampling-options.js';
import type { OpenAITool } from '../tool-calls/types.js';
import { type Fields, invalid } from './fields.js';

/** Longer conversations than this are not a real request (the context runs out far sooner). */
export const MAX_MESSAGES = 10_000;
/** More tools than this is not a real request; every tool is rendered into the prompt. */
export const MAX_TOOLS = 1024;
/** Stop strings per request (OpenAI allows 4; the runtime scans each on every token). */
export const MAX_STOP = 16;

export interface ChatRequest {
  messages: ChatMessage[];
  tools: OpenAITool[];
  toolChoice: ToolChoice;
  parallelToolCalls: boolean;
  maxTokens: number;
  stop: string[];
  sampling: SamplingOptions;
  /** The template's thinking switch, when the request sets it. */
  enableThinking?: boolean;
  /** Log-probabilities requested: the alternatives per token (0 to 20). */
  logprobs?: number;
  /** Structured output: what the answer must be. */
  responseFormat?: ResponseFormat;
}

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'] as const;
/** OpenAI's rule for function names. */
const TOOL_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Message content: a string, null, or a list of text parts (joined); other part types are refused. */
export function readTextContent(f: Fields, key: string, opts: { allowNull: boolean }): string | null {
  const v = f.raw(key);
  if (v === undefined) {
    if (opts.allowNull) return null;
    throw new InvalidArgumentError(`'${f.at(key)}' is required: send a string or a list of text parts.`, f.at(key));
  }
  if (typeof v === 'string') return v;
  const parts = f.objects(key)!;
  let text = '';
  for (const part of parts) {
    const type = part.string('type', { required: true });
    if (type !== 'text' && type !== 'input_text' && type !== 'output_text') {
      throw new InvalidArgumentError(`'${part.at('type')}' is "${type}": this server accepts only text content parts.`, part.at('type'));
    }
    text += part.string('text', { required: true });
  }
  return text;
}

/** The request's messages; a tool message must answer a call of an earlier assistant message, as OpenAI requires. */
export function readOpenAIMessages(f: Fields): ChatMessage[] {
  const list = f.objects('messages', { required: true, nonEmpty: true, max: MAX_MESSAGES })!;
  const calls = new Set<string>();
  return list.map((m) => {
    const role = m.oneOf('role', ROLES);
    if (role === undefined) throw new InvalidArgumentError(`'${m.at('role')}' is required: one of ${ROLES.join(', ')}.`, m.at('role'));
    const msg: ChatMessage = { role, content: readTextContent(m, 'content', { allowNull: role === 'assistant' }) };
    const name = m.string('name');
    if (name !== undefined) msg.name = name;
    if (role === 'assistant') {
      const toolCalls = m.objects('tool_calls', { max: MAX_TOOLS });
      if (toolCalls !== undefined && toolCalls.length > 0) msg.tool_calls = toolCalls.map(readToolCall);
      for (const c of msg.tool_calls ?? []) calls.add(c.id);
      const reasoning = m.string('reasoning_content') ?? m.string('reasoning');
      if (reasoning !== undefined) msg.reasoning_content = reasoning;
    }
    if (role === 'tool') {
      msg.tool_call_id = m.string('tool_call_id', { required: true });
      if (!calls.has(msg.tool_call_id)) {
        throw new InvalidArgumentError(
          `'${m.at('tool_call_id')}' is ${quote(msg.tool_call_id)}, which no earlier assistant message calls: `
            + 'a tool message must answer a tool call. Send the assistant message with that call before its result.',
          m.at('tool_call_id'),
        );
      }
    }
    return msg;
  });
}

function readToolCall(c: Fields): ChatToolCall {
  c.oneOf('type', ['function']);
  const fn = c.object('function', { required: true })!;
  return {
    id: c.string('id', { required: true }),
    type: 'function',
    function: { name: fn.string('name', { required: true, nonEmpty: true }), arguments: fn.string('arguments', { required: true }) },
  };
}

function checkToolName(f: Fields, key: string): string {
  const name = f.string(key, { required: true });
  if (!TOOL_NAME.test(name)) throw invalid(f.at(key), 'a function name of 1 to 128 letters, digits, _ . : -', name);
  return name;
}

/**
 * One function tool: name, description and JSON schema, from an OpenAI chat tool's `function`
 * object, a Responses tool (`parameters`) or an Anthropic tool (`input_schema`, required).
 */
export function readFunctionTool(f: Fields, schemaKey: 'parameters' | 'input_schema'): OpenAITool {
  const tool: OpenAITool = { type: 'function', function: { name: checkToolName(f, 'name') } };
  const description = f.string('description');
  if (description !== undefined) tool.function.description = description;
  const schema = f.object(schemaKey, { required: schemaKey === 'input_schema' });
  if (schema !== undefined) tool.function.parameters = schema.obj;
  // Strict tools have their arguments constrained to the schema.
  const strict = f.boolean('strict');
  if (strict !== undefined) tool.function.strict = strict;
  return tool;
}

/** The request's `tools`, each read by `read`; a name declared twice is refused. */
export function readTools(f: Fields, read: (t: Fields) => OpenAITool): OpenAITool[] {
  const tools = (f.objects('tools', { max: MAX_TOOLS }) ?? []).map(read);
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.function.name)) throw new InvalidArgumentError(`'tools' declares the tool '${t.function.name}' twice.`, 'tools');
    seen.add(t.function.name);
  }
  return tools;
}

export function readOpenAITools(f: Fields): OpenAITool[] {
  return readTools(f, (t) => {
    if (t.oneOf('type', ['function']) === undefined) throw new InvalidArgumentError(`'${t.at('type')}' is required: "function".`, t.at('type'));
    return readFunctionTool(t.object('function', { required: true })!, 'parameters');
  });
}

/** OpenAI's tool_choice (chat shape `{type, function: {name}}` or Responses' flat `{type, name}`). */
export function readOpenAIToolChoice(f: Fields, tools: OpenAITool[]): ToolChoice {
  const v = f.raw('tool_choice');
  if (v === undefined) return 'auto';
  if (typeof v === 'string') {
    if (v !== 'auto' && v !== 'none' && v !== 'required') throw invalid('tool_choice', '"auto", "none", "required" or a named function', v);
    if (v === 'required' && tools.length === 0) {
      throw new InvalidArgumentError(`'tool_choice' is "required" but the request declares no tools.`, 'tool_choice');
    }
    return v;
  }
  const c = f.object('tool_choice')!;
  if (c.string('type', { required: true }) !== 'function') throw invalid('tool_choice.type', '"function"', c.raw('type'));
  const fn = c.object('function');
  const name = fn ? fn.string('name', { required: true }) : c.string('name', { required: true });
  return namedChoice(tools, name, 'tool_choice');
}

export function namedChoice(tools: OpenAITool[], name: string, path: string): ToolChoice {
  if (!tools.some((t) => t.function.name === name)) {
    throw new InvalidArgumentError(`'${path}' names the tool '${name}', which the request does not declare in 'tools'.`, path);
  }
  return { type: 'function', function: { name } };
}
