// An OpenAI Responses request -> the server's ChatRequest. Input items (messages,
// function_call, function_call_output) become OpenAI-shaped chat messages; a previous response's
// stored conversation goes first; `instructions` become a system message for this turn only.
import type { ChatMessage } from '../chat/messages.js';
import { InvalidArgumentError } from '../errors.js';
import { type ChatRequest, MAX_MESSAGES, readFunctionTool, readOpenAIToolChoice, readTextContent, readTools } from './chat-request.js';
import type { Fields } from './fields.js';
import type { ResponseOutputItem } from './responses-encoder.js';
import { openAISampling } from './sampling-fields.js';

export interface ResponsesRequest {
  chat: ChatRequest;
  /** The conversation this turn adds to (previous + input), without instructions. */
  conversation: ChatMessage[];
}

export function readResponsesRequest(f: Fields, previous: ChatMessage[], contextSize: number, vocabSize: number): ResponsesRequest {
  const conversation = [...previous, ...readInput(f)];
  const instructions = f.string('instructions');
  const messages: ChatMessage[] = instructions !== undefined ? [{ role: 'system', content: instructions }, ...conversation] : conversation;
  if (messages.length === 0) throw new InvalidArgumentError(`'input' is required: a string or a list of input items.`, 'input');

  const tools = readTools(f, (t) => {
    const type = t.string('type', { required: true });
    if (type !== 'function') {
      throw new InvalidArgumentError(`'${t.at('type')}' is "${type}": this server runs only function tools.`, t.at('type'));
    }
    return readFunctionTool(t, 'parameters');
  });
  const text = f.object('text')?.object('format');
  if (text !== undefined && text.string('type') !== 'text') {
    throw new InvalidArgumentError(`'text.format.type' must be "text": structured output is not supported by this server.`, 'text.format.type');
  }
  const chat: ChatRequest = {
    messages,
    tools,
    toolChoice: readOpenAIToolChoice(f, tools),
    parallelToolCalls: f.boolean('parallel_tool_calls') ?? true,
    maxTokens: f.number('max_output_tokens', { min: 1, max: 2 ** 31 - 1, integer: true }) ?? contextSize,
    stop: [],
    sampling: openAISampling(f, vocabSize),
  };
  return { chat, conversation };
}

function readInput(f: Fields): ChatMessage[] {
  const v = f.raw('input');
  if (v === undefined) return [];
  if (typeof v === 'string') return [{ role: 'user', content: v }];
  const out: ChatMessage[] = [];
  for (const item of f.objects('input', { max: MAX_MESSAGES })!) {
    const type = item.string('type') ?? 'message';
    switch (type) {
      case 'message': {
        const role = item.oneOf('role', ['system', 'developer', 'user', 'assistant']);
        if (role === undefined) throw new InvalidArgumentError(`'${item.at('role')}' is required: "user", "assistant", "system" or "developer".`, item.at('role'));
        out.push({ role, content: readTextContent(item, 'content', { allowNull: false }) });
        break;
      }
      case 'function_call': {
        const call = {
          id: item.string('call_id', { required: true }),
          type: 'function' as const,
          function: { name: item.string('name', { required: true }), arguments: item.string('arguments', { required: true }) },
        };
        // Consecutive calls (and the text before them) are one assistant turn.
        const last = out[out.length - 1];
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
        else out.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output': {
        const output = typeof item.raw('output') === 'string' ? item.string('output')! : readTextContent(item, 'output', { allowNull: false })!;
        out.push({ role: 'tool', tool_call_id: item.string('call_id', { required: true }), content: output });
        break;
      }
      case 'reasoning':
        break;
      default:
        throw new InvalidArgumentError(
          `'${item.at('type')}' is "${type}": this server accepts message, function_call and function_call_output items.`, item.at('type'),
        );
    }
  }
  return out;
}

/** A response's output items as the assistant turn a later request continues from. */
export function outputAsMessages(output: ResponseOutputItem[]): ChatMessage[] {
  let content: string | null = null;
  let reasoning: string | undefined;
  const calls: NonNullable<ChatMessage['tool_calls']> = [];
  for (const item of output) {
    if (item.type === 'message') content = (content ?? '') + item.content.map((p) => p.text).join('');
    else if (item.type === 'reasoning') reasoning = (reasoning ?? '') + item.content.map((p) => p.text).join('');
    else if (item.status === 'completed') calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
  }
  const msg: ChatMessage = { role: 'assistant', content };
  if (calls.length > 0) msg.tool_calls = calls;
  if (reasoning !== undefined) msg.reasoning_content = reasoning;
  return [msg];
}
