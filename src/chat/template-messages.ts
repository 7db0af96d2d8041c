// Turns OpenAI-shaped messages (untrusted) into what chat templates expect, the way Hugging Face
// transformers users pass them, with the per-template quirks:
// - tool-call arguments become objects (Qwen2.5, Llama 3.x and Mistral run them through tojson,
//   Qwen3-Coder iterates them); a string that is not JSON stays a string only for templates that
//   test `arguments is string`;
// - content is always a string: null, absent and [] become "" (Qwen3, Llama 2 and TinyLlama fail on
//   None, and no template renders "" differently from None where None works), text parts are joined;
// - `tool_calls` is left out unless there are calls (Llama 3.x and Hermes test for the key);
// - `developer` becomes `system` unless the template names the developer role;
// - a template that never mentions `system` gets the system text in front of the first user message;
// - a tool message gets the `name` of the call it answers; `reasoning` becomes `reasoning_content`.
import { InvalidArgumentError } from '../errors.js';
import type { ChatMessage } from './messages.js';

/** Messages per request; far above any context, this bounds the work spent on a hostile body. */
export const MAX_MESSAGES = 100_000;
/** Tool calls per assistant message (the tool-call parser's own limit). */
export const MAX_TOOL_CALLS = 1024;
/** Nesting of argument objects; deeper JSON is refused before the template recurses into it. */
export const MAX_JSON_DEPTH = 128;

export interface TemplateToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: unknown };
}

export interface TemplateMessage {
  role: string;
  content: string;
  name?: string;
  reasoning_content?: string;
  tool_calls?: TemplateToolCall[];
  tool_call_id?: string;
}

export interface TemplateQuirks {
  knowsDeveloperRole: boolean;
  hasSystemRole: boolean;
  /** The template inserts string arguments verbatim (`arguments is string`). */
  acceptsStringArguments: boolean;
  /** The template knows `<think>` blocks (a thinking model's): replies may open with reasoning. */
  thinks: boolean;
}

export function templateQuirks(source: string): TemplateQuirks {
  return {
    knowsDeveloperRole: source.includes('developer'),
    hasSystemRole: source.includes('system'),
    acceptsStringArguments: /arguments\s+is\s+string/.test(source),
    thinks: source.includes('<think>'),
  };
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

export function toTemplateMessages(messages: unknown, quirks: TemplateQuirks): TemplateMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new InvalidArgumentError('messages must be a non-empty array', 'messages');
  if (messages.length > MAX_MESSAGES) throw new InvalidArgumentError(`messages has ${messages.length} entries; at most ${MAX_MESSAGES}`, 'messages');
  const callNames = new Map<string, string>();
  const out: TemplateMessage[] = [];
  messages.forEach((raw: unknown, i) => {
    const at = `messages[${i}]`;
    if (raw === null || typeof raw !== 'object') throw new InvalidArgumentError(`${at} must be an object`, at);
    const m = raw as ChatMessage;
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) {
      throw new InvalidArgumentError(`${at}.role must be one of system, developer, user, assistant, tool; got ${JSON.stringify(m.role)}`, `${at}.role`);
    }
    const role = m.role === 'developer' && !quirks.knowsDeveloperRole ? 'system' : m.role;
    const t: TemplateMessage = { role, content: contentText(m.content, `${at}.content`) };
    if (m.name !== undefined) t.name = str(m.name, `${at}.name`);
    if (m.role === 'assistant') {
      const reasoning = m.reasoning_content ?? m.reasoning;
      if (reasoning != null) t.reasoning_content = str(reasoning, `${at}.reasoning_content`);
      if (m.tool_calls != null) {
        const calls = toolCalls(m.tool_calls, `${at}.tool_calls`, quirks);
        for (const c of calls) callNames.set(c.id, c.function.name);
        if (calls.length > 0) t.tool_calls = calls;
      }
    } else if (m.tool_calls != null) {
      throw new InvalidArgumentError(`${at}.tool_calls is only allowed on assistant messages`, `${at}.tool_calls`);
    }
    if (m.role === 'tool') {
      t.tool_call_id = str(m.tool_call_id, `${at}.tool_call_id`);
      const name = callNames.get(t.tool_call_id);
      if (t.name === undefined && name !== undefined) t.name = name;
    }
    out.push(t);
  });
  return quirks.hasSystemRole ? out : mergeSystemIntoFirstUser(out);
}

function contentText(content: unknown, at: string): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new InvalidArgumentError(`${at} must be a string, an array of text parts, or null`, at);
  return content.map((part: unknown, k) => {
    const p = part as { type?: unknown; text?: unknown } | null;
    if (p === null || typeof p !== 'object' || p.type !== 'text' || typeof p.text !== 'string') {
      throw new InvalidArgumentError(`${at}[${k}] must be a text part {type: 'text', text}; this model reads text only`, `${at}[${k}]`);
    }
    return p.text;
  }).join('');
}

function toolCalls(calls: unknown, at: string, quirks: TemplateQuirks): TemplateToolCall[] {
  if (!Array.isArray(calls)) throw new InvalidArgumentError(`${at} must be an array`, at);
  if (calls.length > MAX_TOOL_CALLS) throw new InvalidArgumentError(`${at} has ${calls.length} calls; at most ${MAX_TOOL_CALLS}`, at);
  return calls.map((raw: unknown, k) => {
    const c = raw as { id?: unknown; function?: { name?: unknown; arguments?: unknown } } | null;
    const where = `${at}[${k}]`;
    if (c === null || typeof c !== 'object' || c.function === null || typeof c.function !== 'object') {
      throw new InvalidArgumentError(`${where} must be {id, type: 'function', function: {name, arguments}}`, where);
    }
    return {
      id: str(c.id, `${where}.id`),
      type: 'function' as const,
      function: { name: str(c.function.name, `${where}.function.name`), arguments: toolArguments(c.function.arguments, `${where}.function.arguments`, quirks) },
    };
  });
}

/** The arguments as the template should see them: an object, or the text when it is not JSON. */
function toolArguments(args: unknown, at: string, quirks: TemplateQuirks): unknown {
  if (args == null) return {};
  if (typeof args === 'string') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch {
      if (quirks.acceptsStringArguments) return args;
      throw new InvalidArgumentError(`${at} is not valid JSON; send the arguments object as JSON text`, at);
    }
    checkDepth(parsed, at);
    return parsed;
  }
  if (typeof args !== 'object' || Array.isArray(args)) throw new InvalidArgumentError(`${at} must be JSON text or an object`, at);
  checkDepth(args, at);
  return args;
}

/** Refuses JSON nested deeper than MAX_JSON_DEPTH, without recursion. */
export function checkDepth(value: unknown, at: string): void {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) throw new InvalidArgumentError(`${at} is nested deeper than ${MAX_JSON_DEPTH} levels`, at);
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
}

function str(v: unknown, at: string): string {
  if (typeof v !== 'string') throw new InvalidArgumentError(`${at} must be a string`, at);
  return v;
}

function mergeSystemIntoFirstUser(messages: TemplateMessage[]): TemplateMessage[] {
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content);
  if (system.length === 0) return messages;
  const rest = messages.filter((m) => m.role !== 'system');
  const first = rest.findIndex((m) => m.role === 'user');
  const prefix = system.join('\n\n');
  if (first < 0) return [{ role: 'user', content: prefix }, ...rest];
  rest[first] = { ...rest[first]!, content: `${prefix}\n\n${rest[first]!.content}` };
  return rest;
}
