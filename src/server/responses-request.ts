// An OpenAI Responses request -> the server's ChatRequest. Input items (messages, reasoning,
// function_call, function_call_output, and item_reference to an item kiln produced) become
// OpenAI-shaped chat messages: reasoning, text and calls that follow each other make one assistant
// turn, with the reasoning as its reasoning_content; a previous response's stored conversation
// goes first; `instructions` become a system message for this turn only. A function_call_output
// must answer a call made before it, as OpenAI requires.
import type { ChatMessage } from '../chat/messages.js';
import { InvalidArgumentError, quote } from '../errors.js';
import { type ChatRequest, MAX_MESSAGES, readFunctionTool, readOpenAIToolChoice, readTextContent, readTools } from './chat-request.js';
import { ItemNotFoundError } from './errors.js';
import { Fields, invalid, type JsonObject } from './fields.js';
import type { ResponseOutputItem } from './responses-encoder.js';
import { readResponsesTextFormat } from './response-format.js';
import { openAISampling } from './sampling-fields.js';
import { unsealReasoning } from './sealed-reasoning.js';
import { refuseUnimplementedResponsesFields } from './unimplemented-fields.js';

export interface ResponsesRequest {
  chat: ChatRequest;
  /** The conversation this turn adds to (previous + input), without instructions. */
  conversation: ChatMessage[];
}

/** Finds an output item kiln produced, by its id, among the stored responses. */
export type StoredItemLookup = (id: string) => ResponseOutputItem | undefined;

export function readResponsesRequest(
  f: Fields, previous: ChatMessage[], contextSize: number, vocabSize: number, storedItem: StoredItemLookup,
): ResponsesRequest {
  refuseUnimplementedResponsesFields(f);
  const conversation = [...previous, ...readInput(f, previous, storedItem)];
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
  const responseFormat = readResponsesTextFormat(f);
  const chat: ChatRequest = {
    messages,
    tools,
    toolChoice: readOpenAIToolChoice(f, tools),
    parallelToolCalls: f.boolean('parallel_tool_calls') ?? true,
    maxTokens: f.number('max_output_tokens', { min: 1, max: 2 ** 31 - 1, integer: true }) ?? contextSize,
    stop: [],
    sampling: openAISampling(f, vocabSize),
  };
  // Reasoning effort "none" asks for no reasoning: the template's thinking switch, where it has one.
  if (f.object('reasoning')?.string('effort') === 'none') chat.enableThinking = false;
  if (responseFormat !== undefined) chat.responseFormat = responseFormat;
  return { chat, conversation };
}

function readInput(f: Fields, previous: readonly ChatMessage[], storedItem: StoredItemLookup): ChatMessage[] {
  const v = f.raw('input');
  if (v === undefined) return [];
  if (typeof v === 'string') return [{ role: 'user', content: v }];
  const input = new InputTurns(previous, storedItem);
  for (const item of f.objects('input', { max: MAX_MESSAGES })!) {
    const type = item.string('type') ?? 'message';
    if (type !== 'item_reference') {
      input.read(item, type);
      continue;
    }
    const id = item.string('id', { required: true });
    const found = storedItem(id);
    if (found === undefined) throw new ItemNotFoundError(id, item.at('id'));
    input.read(new Fields(found as unknown as JsonObject, item.path), found.type);
  }
  return input.out;
}

/** Input items in order -> chat messages, with the call ids seen so far. */
class InputTurns {
  readonly out: ChatMessage[] = [];
  private readonly calls = new Set<string>();

  constructor(previous: readonly ChatMessage[], private readonly storedItem: StoredItemLookup) {
    for (const m of previous) for (const c of m.tool_calls ?? []) this.calls.add(c.id);
  }

  read(item: Fields, type: string): void {
    switch (type) {
      case 'message': {
        const role = item.oneOf('role', ['system', 'developer', 'user', 'assistant']);
        if (role === undefined) throw new InvalidArgumentError(`'${item.at('role')}' is required: "user", "assistant", "system" or "developer".`, item.at('role'));
        const content = readTextContent(item, 'content', { allowNull: false });
        // Text after the turn's reasoning is the same turn.
        const turn = this.openTurn();
        if (role === 'assistant' && turn !== undefined && turn.content === null) turn.content = content;
        else this.out.push({ role, content });
        break;
      }
      case 'reasoning': {
        const text = this.reasoningText(item);
        if (text === '') break;
        const turn = this.openTurn();
        if (turn !== undefined) turn.reasoning_content = (turn.reasoning_content ?? '') + text;
        else this.out.push({ role: 'assistant', content: null, reasoning_content: text });
        break;
      }
      case 'function_call': {
        const call = {
          id: item.string('call_id', { required: true }),
          type: 'function' as const,
          function: { name: item.string('name', { required: true }), arguments: item.string('arguments', { required: true }) },
        };
        this.calls.add(call.id);
        // Consecutive calls (and the text and reasoning before them) are one assistant turn.
        const last = this.out[this.out.length - 1];
        if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
        else this.out.push({ role: 'assistant', content: null, tool_calls: [call] });
        break;
      }
      case 'function_call_output': {
        const output = typeof item.raw('output') === 'string' ? item.string('output')! : readTextContent(item, 'output', { allowNull: false })!;
        const callId = item.string('call_id', { required: true });
        if (!this.calls.has(callId)) {
          throw new InvalidArgumentError(
            `'${item.at('call_id')}' is ${quote(callId)}, which no function_call before it has (in this input or the previous response): `
              + 'a function_call_output must answer a call. Send the function_call item before its output.',
            item.at('call_id'),
          );
        }
        this.out.push({ role: 'tool', tool_call_id: callId, content: output });
        break;
      }
      default:
        throw new InvalidArgumentError(
          `'${item.at('type')}' is "${type}": this server accepts message, reasoning, function_call, function_call_output and item_reference items.`,
          item.at('type'),
        );
    }
  }

  /** The last message, when it is an assistant turn that has made no call yet (so more of the turn may follow). */
  private openTurn(): ChatMessage | undefined {
    const last = this.out[this.out.length - 1];
    return last?.role === 'assistant' && (last.tool_calls ?? []).length === 0 ? last : undefined;
  }

  /**
   * A reasoning item's text: its `reasoning_text` content; else what kiln sealed in its
   * encrypted_content, or the item kiln stored under its id (clients that keep only the summary
   * send those back); else its summary, the best account of the reasoning there is.
   */
  private reasoningText(item: Fields): string {
    const content = item.objects('content');
    if (content !== undefined && content.length > 0) {
      return content.map((part) => {
        if (part.string('type', { required: true }) !== 'reasoning_text') throw invalid(part.at('type'), '"reasoning_text"', part.raw('type'));
        return part.string('text', { required: true });
      }).join('');
    }
    const sealed = item.string('encrypted_content');
    const unsealed = sealed === undefined ? null : unsealReasoning(sealed);
    if (unsealed !== null) return unsealed;
    const id = item.string('id');
    const stored = id === undefined ? undefined : this.storedItem(id);
    if (stored?.type === 'reasoning') return stored.content.map((p) => p.text).join('');
    return (item.objects('summary') ?? []).map((part) => {
      if (part.string('type', { required: true }) !== 'summary_text') throw invalid(part.at('type'), '"summary_text"', part.raw('type'));
      return part.string('text', { required: true });
    }).join('\n\n');
  }
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
