// An Anthropic Messages request -> the server's ChatRequest: `system` becomes a system message,
// content blocks become OpenAI-shaped messages (tool_use -> tool_calls with the input as JSON
// text, tool_result -> tool messages, thinking -> reasoning_content), tools and tool_choice map
// to their OpenAI equivalents. Tool ids are read back as kiln minted them (anthropic-tool-ids.ts);
// a tool_result must answer a tool_use before it, as Anthropic requires; a thinking block whose
// text the client left out (thinking shown as "omitted") gets it back from kiln's signature.
import type { ChatMessage, ChatToolCall } from '../chat/messages.js';
import { InvalidArgumentError, quote } from '../errors.js';
import { type ChatRequest, MAX_MESSAGES, MAX_STOP, namedChoice, readFunctionTool, readTools } from './chat-request.js';
import { fromAnthropicToolId } from './anthropic-tool-ids.js';
import { type Fields, invalid } from './fields.js';
import { readAnthropicOutputFormat } from './response-format.js';
import { anthropicSampling } from './sampling-fields.js';
import { unsealReasoning } from './sealed-reasoning.js';
import { refuseUnimplementedAnthropicFields } from './unimplemented-fields.js';

export function readAnthropicRequest(f: Fields): ChatRequest {
  refuseUnimplementedAnthropicFields(f);
  const maxTokens = f.number('max_tokens', { required: true, min: 1, max: 2 ** 31 - 1, integer: true })!;
  const messages: ChatMessage[] = [];
  const system = readSystem(f);
  if (system !== undefined) messages.push({ role: 'system', content: system });
  const list = f.objects('messages', { required: true, nonEmpty: true, max: MAX_MESSAGES })!;
  const calls = new Set<string>();
  for (const m of list) messages.push(...readMessage(m, calls));
  // Anthropic continues a final assistant message (prefill); the chat layer would start a new turn.
  const last = list[list.length - 1]!;
  if (last.raw('role') === 'assistant') {
    throw new InvalidArgumentError(
      `'${last.at('role')}' is "assistant": this server does not continue a final assistant message (prefill). End the conversation with a user message.`,
      last.at('role'),
    );
  }

  const tools = readTools(f, (t) => {
    const type = t.string('type');
    if (type !== undefined && type !== 'custom') {
      throw new InvalidArgumentError(`'${t.at('type')}' is "${type}": this server runs only client tools (with input_schema).`, t.at('type'));
    }
    return readFunctionTool(t, 'input_schema');
  });

  const req: ChatRequest = {
    messages,
    tools,
    toolChoice: 'auto',
    parallelToolCalls: true,
    maxTokens,
    // Anthropic takes only a list here; stringList alone would also accept a bare string.
    stop: f.array('stop_sequences') ? f.stringList('stop_sequences', { max: MAX_STOP })! : [],
    sampling: anthropicSampling(f),
  };
  const choice = f.object('tool_choice');
  if (choice !== undefined) {
    const type = choice.oneOf('type', ['auto', 'any', 'tool', 'none']);
    if (type === undefined) throw new InvalidArgumentError(`'tool_choice.type' is required: "auto", "any", "tool" or "none".`, 'tool_choice.type');
    if (type === 'any' && tools.length === 0) throw new InvalidArgumentError(`'tool_choice' is "any" but the request declares no tools.`, 'tool_choice');
    req.toolChoice = type === 'tool' ? namedChoice(tools, choice.string('name', { required: true }), 'tool_choice.name') : type === 'any' ? 'required' : type;
    if (choice.boolean('disable_parallel_tool_use') === true) req.parallelToolCalls = false;
  }
  const thinking = f.object('thinking');
  if (thinking !== undefined) {
    const type = thinking.oneOf('type', ['enabled', 'disabled', 'adaptive']);
    if (type !== undefined) req.enableThinking = type !== 'disabled';
  }
  f.object('metadata');
  const responseFormat = readAnthropicOutputFormat(f);
  if (responseFormat !== undefined) req.responseFormat = responseFormat;
  return req;
}

function readSystem(f: Fields): string | undefined {
  const v = f.raw('system');
  if (v === undefined) return undefined;
  if (typeof v === 'string') return v;
  return f.objects('system')!.map((b) => {
    if (b.string('type', { required: true }) !== 'text') throw invalid(b.at('type'), '"text"', b.raw('type'));
    return b.string('text', { required: true });
  }).join('\n');
}

/**
 * One Anthropic message -> one or more OpenAI messages (each tool_result is its own tool message).
 * `calls` holds the ids of the tool_use blocks so far.
 */
function readMessage(m: Fields, calls: Set<string>): ChatMessage[] {
  const role = m.oneOf('role', ['user', 'assistant']);
  if (role === undefined) throw new InvalidArgumentError(`'${m.at('role')}' is required: "user" or "assistant".`, m.at('role'));
  const content = m.raw('content');
  if (content === undefined) throw new InvalidArgumentError(`'${m.at('content')}' is required: a string or a list of content blocks.`, m.at('content'));
  if (typeof content === 'string') return [{ role, content }];

  const out: ChatMessage[] = [];
  let text: string | null = null;
  let reasoning: string | undefined;
  const toolCalls: ChatToolCall[] = [];
  for (const b of m.objects('content')!) {
    const type = b.string('type', { required: true });
    switch (type) {
      case 'text':
        text = (text ?? '') + b.string('text', { required: true });
        break;
      case 'thinking':
        if (role !== 'assistant') throw invalid(b.at('type'), 'a user block type (text, tool_result)', type);
        reasoning = (reasoning ?? '') + thinkingText(b);
        break;
      case 'redacted_thinking':
        break;
      case 'tool_use': {
        if (role !== 'assistant') throw invalid(b.at('type'), 'a user block type (text, tool_result)', type);
        const input = b.object('input', { required: true })!;
        const id = fromAnthropicToolId(b.string('id', { required: true }));
        calls.add(id);
        toolCalls.push({ id, type: 'function', function: { name: b.string('name', { required: true }), arguments: JSON.stringify(input.obj) } });
        break;
      }
      case 'tool_result': {
        if (role !== 'user') throw invalid(b.at('type'), 'an assistant block type (text, thinking, tool_use)', type);
        const result = b.raw('content') === undefined ? '' : readToolResult(b);
        const isError = b.boolean('is_error') === true;
        const sent = b.string('tool_use_id', { required: true });
        const id = fromAnthropicToolId(sent);
        if (!calls.has(id)) {
          throw new InvalidArgumentError(
            `'${b.at('tool_use_id')}' is ${quote(sent)}, which no earlier tool_use block has: a tool_result must answer a tool_use. `
              + 'Send the assistant message with that tool_use before its result.',
            b.at('tool_use_id'),
          );
        }
        out.push({ role: 'tool', tool_call_id: id, content: isError ? `Error: ${result}` : result });
        break;
      }
      default:
        throw new InvalidArgumentError(`'${b.at('type')}' is "${type}": this server accepts text, thinking, tool_use and tool_result blocks.`, b.at('type'));
    }
  }
  if (role === 'assistant') {
    const msg: ChatMessage = { role, content: text };
    if (toolCalls.length > 0) msg.tool_calls = toolCalls;
    if (reasoning !== undefined) msg.reasoning_content = reasoning;
    out.push(msg);
  } else if (text !== null || out.length === 0) {
    out.push({ role, content: text ?? '' });
  }
  return out;
}

/** A thinking block's text, or when it is empty (shown "omitted"), what kiln sealed in its signature. */
function thinkingText(b: Fields): string {
  const text = b.string('thinking', { required: true });
  const signature = b.string('signature');
  return text === '' && signature !== undefined ? (unsealReasoning(signature) ?? '') : text;
}

function readToolResult(b: Fields): string {
  if (typeof b.raw('content') === 'string') return b.string('content')!;
  return b.objects('content')!.map((part) => {
    if (part.string('type', { required: true }) !== 'text') {
      throw new InvalidArgumentError(`'${part.at('type')}' must be "text": this server accepts only text tool results.`, part.at('type'));
    }
    return part.string('text', { required: true });
  }).join('');
}
