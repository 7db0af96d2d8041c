// Builds a chat prompt's tokens. The template renders the whole conversation; then each assistant
// turn kiln generated (found in the replay cache by the tool-call ids kiln minted, with arguments
// that mean the same as recorded) is located in the rendering and, where the template's text for
// the turn means the same as what the model wrote (same calls and arguments, same content and
// reasoning), replaced by the tokens the model sampled. Where the template changes the turn's
// meaning (Qwen3 drops thinking from turns before the last user message, Llama 3 drops content on
// tool-call turns, Mistral Nemo adds call ids the model did not write), the template's text stays,
// and only the longest start of the turn that the template renders byte for byte as the model
// wrote it keeps the sampled tokens. The rest is tokenized from the template's text.
import { createHash } from 'node:crypto';
import { parseToolCalls, promptEndsInReasoning, type OpenAITool, type ToolCallFormat } from '../tool-calls/index.js';
import type { ChatTemplate, RenderContext } from './chat-template.js';
import { spellTokens, type PromptTokenizer } from './prompt-tokenizer.js';
import { RenderMovesOffThread } from './template-limits.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import type { ReplayCache, ReplayRecord } from './replay-cache.js';
import { parseJson, sameJson } from './same-json.js';
import type { TemplateMessage, TemplateToolCall } from './template-messages.js';

export interface PromptSegment {
  /** `replay`: a recorded turn's sampled tokens; `text`: tokenized template text. */
  kind: 'text' | 'replay';
  tokenStart: number;
  tokenEnd: number;
  /** The range of BuiltPrompt.text it stands for (for a replayed turn, the template's rendering of it). */
  charStart: number;
  charEnd: number;
  /** The assistant message a replayed segment is. */
  messageIndex?: number;
}

export interface BuiltPrompt {
  tokens: number[];
  /** The rendered conversation, as the client's strings were written. */
  text: string;
  segments: PromptSegment[];
  /** Indexes of the assistant messages replayed whole from recorded tokens. */
  replayed: number[];
  /** Assistant messages of which only a first part was replayed (the template changes the rest). */
  partlyReplayed: number[];
  /** Whether the prompt leaves a `<think>` open, so the reply starts inside reasoning. */
  startsInReasoning: boolean;
  /** The rendered prompt's length and sha256, as a record of the turn generated after it keeps them. */
  renderedChars: number;
  renderedHash: string;
  /** The role of each message, in order. */
  roles: string[];
  /**
   * Where each message starts in `text`, then where the last one ends (the generation prompt
   * follows). Computed on demand: one render per message.
   */
  messageStarts(): number[];
  /**
   * The tokens the template writes after an assistant reply to this prompt, before the next
   * message (ChatML: `<|im_end|>` and a newline); null when the template will not render a reply
   * here. Computed on demand: one render.
   */
  turnEnd(): number[] | null;
}

export interface ReplaySource {
  cache: ReplayCache;
  /** Model and template: records from other scopes are never used. */
  scope: string;
  format: ToolCallFormat;
  /** Declared tools, to parse rendered turns (Qwen3-Coder types values by their schema). */
  tools: readonly OpenAITool[];
}

export interface BuildPromptInput {
  template: ChatTemplate;
  prompts: PromptTokenizer;
  messages: readonly TemplateMessage[];
  tools?: readonly object[] | undefined;
  variables: Record<string, unknown>;
  now: Date;
  replay: ReplaySource | null;
}

interface Splice {
  start: number;
  end: number;
  tokens: readonly number[];
  messageIndex: number;
  whole: boolean;
}

/** The conversation as the template gets it: recorded turns in, client strings escaped. */
interface Escaped {
  messages: TemplateMessage[];
  candidates: Array<{ index: number; record: ReplayRecord }>;
  sentinel: string | null;
  escapedMessages: readonly TemplateMessage[];
  /** A render context for these messages (the tools, variables and time are the prompt's). */
  context: (msgs: readonly object[], addGenerationPrompt: boolean) => RenderContext;
}

/** The prompt built, but for the tokens of its template text, in the order they come. */
interface PromptPlan {
  input: BuildPromptInput;
  messages: TemplateMessage[];
  escapedMessages: readonly TemplateMessage[];
  rendered: string;
  sentinel: string | null;
  splices: Splice[];
  render: (msgs: readonly object[], addGenerationPrompt: boolean) => string;
  /** The ranges of `rendered` tokenized as text: before, between and after the splices. */
  textRanges: Array<[number, number]>;
  /** The conversation rendered with a reply appended (for turnEnd), when it was rendered with the prompt. */
  withReply?: string | Error;
}

export function buildPrompt(input: BuildPromptInput): BuiltPrompt {
  const plan = planPrompt(input, escapeInput(input));
  return assemble(plan, plan.textRanges.map(([from, to]) => input.prompts.encode(plan.rendered.slice(from, to), plan.sentinel)));
}

/**
 * buildPrompt() without holding the event loop: a long conversation renders on the render thread
 * (see ChatTemplate.rendersOffThread), with the reply-appended rendering turnEnd needs alongside, and the
 * template text is tokenized in slices that let the event loop run between them (see
 * Tokenizer.encodeAsync). Tokenizing stops once the prompt has more than `maxTokens`; the prompt
 * returned is then longer than `maxTokens` and its tokens are only a start.
 */
export async function buildPromptAsync(input: BuildPromptInput, maxTokens: number): Promise<BuiltPrompt> {
  const esc = escapeInput(input);
  let plan: PromptPlan;
  const offThread = async () => {
    const [rendered, withReply] = await input.template.renderOffThread([
      esc.context(esc.escapedMessages, true),
      esc.context([...esc.escapedMessages, { role: 'assistant', content: TURN_PROBE }], false),
    ]);
    if (rendered instanceof Error) throw rendered;
    return planPrompt(input, esc, { rendered: rendered!, withReply: withReply! }, true);
  };
  if (input.template.rendersOffThread(esc.escapedMessages.length)) {
    plan = await offThread();
  } else {
    try {
      plan = planPrompt(input, esc, undefined, true);
    } catch (e) {
      // The render held the event loop too long: it (and this template's later ones) renders on the render thread.
      if (!(e instanceof RenderMovesOffThread)) throw e;
      plan = await offThread();
    }
  }
  let budget = maxTokens - plan.splices.reduce((n, s) => n + s.tokens.length, 0);
  const lists: number[][] = [];
  for (const [from, to] of plan.textRanges) {
    const ids = budget < 0 ? [] : await input.prompts.encodeAsync(plan.rendered.slice(from, to), plan.sentinel, budget);
    budget -= ids.length;
    lists.push(ids);
  }
  return assemble(plan, lists);
}

function escapeInput(input: BuildPromptInput): Escaped {
  const { prompts, replay } = input;
  const messages = input.messages.slice();
  const candidates: Array<{ index: number; record: ReplayRecord }> = [];
  if (replay !== null) {
    messages.forEach((m, index) => {
      const record = recordFor(m, replay);
      if (record === null) return;
      messages[index] = withRecordedTurn(m, record);
      candidates.push({ index, record });
    });
  }
  const sentinel = prompts.sentinelFor(stringsOf([messages, input.tools ?? []]));
  const escape = <T>(v: T): T => (sentinel === null ? v : mapStrings(v, (s) => prompts.escape(s, sentinel)));
  const tools = escape(input.tools);
  const context = (msgs: readonly object[], addGenerationPrompt: boolean): RenderContext =>
    ({ messages: msgs, tools, addGenerationPrompt, variables: input.variables, now: input.now });
  return { messages, candidates, sentinel, escapedMessages: escape(messages), context };
}

/**
 * `pre`: the prompt already rendered (and with a reply appended), on the render thread.
 * `onMainThread`: renders here may hold the event loop only MAIN_THREAD_RENDER_MS (the caller can
 * move them to the render thread); a template whose renders have moved renders nothing more here
 * (a replayed turn found by its recorded hash still splices; one that needs a re-render does not).
 */
function planPrompt(input: BuildPromptInput, esc: Escaped, pre?: { rendered: string; withReply: string | Error }, onMainThread = false): PromptPlan {
  const { template, prompts, replay } = input;
  const tokenizer = prompts.tokenizer;
  const { messages, candidates, sentinel, escapedMessages } = esc;
  const render = (msgs: readonly object[], addGenerationPrompt: boolean) => {
    if (onMainThread && template.movedOffThread) throw new RenderMovesOffThread();
    return template.render({ ...esc.context(msgs, addGenerationPrompt), onMainThread });
  };
  const rendered = pre?.rendered ?? render(escapedMessages, true);

  const splices: Splice[] = [];
  for (const c of candidates) {
    const from = splices.length > 0 ? splices[splices.length - 1]!.end : 0;
    const { record, index } = c;
    const start = turnStart(record, rendered, from, (gen) => render(escapedMessages.slice(0, index), gen));
    if (start < 0 || record.tokens.some((t) => t >= tokenizer.vocabSize)) continue;
    const eog = prompts.indexOfEog(rendered, start);
    const end = eog < 0 ? rendered.length : eog;
    const turn = prompts.unescape(rendered.slice(start, end), sentinel);
    const reasoningOpen = promptEndsInReasoning(prompts.unescape(rendered.slice(0, start), sentinel));
    if (eog >= 0 && meansTheSame(turn, record, replay!, reasoningOpen) && spellTokens(tokenizer, record.tokens) === record.text) {
      splices.push({ start, end, tokens: record.tokens, messageIndex: index, whole: true });
      continue;
    }
    const same = sameStart(record.tokens, turn, tokenizer);
    if (same.tokens > 0) {
      const stop = sentinel === null ? start + same.chars : escapedOffset(rendered, start, same.chars, sentinel);
      splices.push({ start, end: stop, tokens: record.tokens.slice(0, same.tokens), messageIndex: index, whole: false });
    }
  }

  const textRanges: Array<[number, number]> = [];
  let pos = 0;
  for (const s of splices) {
    if (s.start > pos) textRanges.push([pos, s.start]);
    pos = s.end;
  }
  if (rendered.length > pos) textRanges.push([pos, rendered.length]);
  return { input, messages, escapedMessages, rendered, sentinel, splices, render, textRanges, ...(pre ? { withReply: pre.withReply } : {}) };
}

function assemble(plan: PromptPlan, textTokens: number[][]): BuiltPrompt {
  const { input, messages, escapedMessages, rendered, sentinel, splices, render } = plan;
  const { prompts } = input;
  const tokenizer = prompts.tokenizer;
  const unescapedLength = (end: number) => (sentinel === null ? end : prompts.unescape(rendered.slice(0, end), sentinel).length);
  const tokens: number[] = [];
  const segments: PromptSegment[] = [];
  if (tokenizer.addBos && tokenizer.bosId !== null && !rendered.startsWith(tokenizer.tokenToPiece(tokenizer.bosId))) {
    tokens.push(tokenizer.bosId);
    segments.push({ kind: 'text', tokenStart: 0, tokenEnd: 1, charStart: 0, charEnd: 0 });
  }
  let nextText = 0;
  const text = (from: number, to: number) => {
    if (to <= from) return;
    const t0 = tokens.length;
    for (const t of textTokens[nextText++]!) tokens.push(t);
    segments.push({ kind: 'text', tokenStart: t0, tokenEnd: tokens.length, charStart: unescapedLength(from), charEnd: unescapedLength(to) });
  };
  let pos = 0;
  for (const s of splices) {
    text(pos, s.start);
    const t0 = tokens.length;
    for (const t of s.tokens) tokens.push(t);
    segments.push({ kind: 'replay', tokenStart: t0, tokenEnd: tokens.length, charStart: unescapedLength(s.start), charEnd: unescapedLength(s.end), messageIndex: s.messageIndex });
    pos = s.end;
  }
  text(pos, rendered.length);

  const fullText = prompts.unescape(rendered, sentinel);
  let starts: number[] | null = null;
  let turnEnd: number[] | null | undefined;
  return {
    tokens,
    text: fullText,
    segments,
    replayed: splices.filter((s) => s.whole).map((s) => s.messageIndex),
    partlyReplayed: splices.filter((s) => !s.whole).map((s) => s.messageIndex),
    startsInReasoning: promptEndsInReasoning(fullText),
    renderedChars: rendered.length,
    renderedHash: sha256(rendered),
    roles: messages.map((m) => m.role),
    messageStarts: () => (starts ??= messageStarts(escapedMessages, rendered, render).map(unescapedLength)),
    turnEnd: () => (turnEnd === undefined
      ? (turnEnd = turnEndTokens(plan.withReply ?? renderOrError(() => render([...escapedMessages, { role: 'assistant', content: TURN_PROBE }], false)), prompts, sentinel))
      : turnEnd),
  };
}

/** Stands for a reply's text when rendering where the reply ends. */
const TURN_PROBE = 'kiln:reply-probe';

/**
 * What the template writes after an assistant message that follows the conversation (see
 * BuiltPrompt.turnEnd), from the conversation rendered with a probe reply appended. A template
 * may refuse the conversation with a reply appended (strict alternation): then there is none.
 */
function turnEndTokens(withReply: string | Error, prompts: PromptTokenizer, sentinel: string | null): number[] | null {
  if (withReply instanceof Error) return null;
  const at = withReply.lastIndexOf(TURN_PROBE);
  return at < 0 ? null : prompts.encode(withReply.slice(at + TURN_PROBE.length), sentinel);
}

function renderOrError(render: () => string): string | Error {
  try {
    return render();
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

/** The record of an assistant message's turn, if every call matches it by id, name and meaning. */
function recordFor(m: TemplateMessage, replay: ReplaySource): ReplayRecord | null {
  const calls = m.tool_calls;
  if (m.role !== 'assistant' || calls === undefined || calls.length === 0) return null;
  const record = replay.cache.get(replay.scope, calls[0]!.id);
  if (record === undefined || record.calls.length !== calls.length) return null;
  const same = record.calls.every((r, k) => {
    const c = calls[k]!;
    const args = c.function.arguments;
    return r.id === c.id && r.name === c.function.name
      && (typeof args === 'string' ? args === r.arguments : sameJson(parseJson(r.arguments), args));
  });
  return same ? record : null;
}

/**
 * The message as the model produced it: the recorded arguments (the model's key order) and, when
 * the client left it out, the recorded reasoning, so the template decides what it keeps.
 */
function withRecordedTurn(m: TemplateMessage, record: ReplayRecord): TemplateMessage {
  const toolCalls: TemplateToolCall[] = m.tool_calls!.map((c, k) => ({
    ...c,
    function: { ...c.function, arguments: parseJson(record.calls[k]!.arguments) ?? c.function.arguments },
  }));
  const out: TemplateMessage = { ...m, tool_calls: toolCalls };
  if (out.reasoning_content === undefined && record.reasoning.trim() !== '') out.reasoning_content = record.reasoning;
  return out;
}

/**
 * Where the recorded turn begins in the rendering: right after the prompt it was generated from,
 * if the rendering still starts with that prompt. The record's hash answers without rendering;
 * otherwise the conversation up to the turn is rendered with the generation prompt. A template
 * that renders the last message differently from an earlier one (Hermes closes the last tool
 * result differently) is not a prefix of the whole: then the turn starts after the first
 * generation prompt at or after the point where the two renderings part. -1: nowhere.
 */
function turnStart(record: ReplayRecord, rendered: string, from: number, renderPrefix: (addGenerationPrompt: boolean) => string): number {
  if (record.promptChars >= from && record.promptChars <= rendered.length && sha256(rendered.slice(0, record.promptChars)) === record.promptHash) {
    return record.promptChars;
  }
  try {
    const prefix = renderPrefix(true);
    if (rendered.startsWith(prefix)) return prefix.length >= from ? prefix.length : -1;
    const bare = renderPrefix(false);
    const generationPrompt = prefix.startsWith(bare) ? prefix.slice(bare.length) : '';
    if (generationPrompt === '') return -1;
    const at = rendered.indexOf(generationPrompt, Math.max(from, commonPrefix(prefix, rendered)));
    return at < 0 ? -1 : at + generationPrompt.length;
  } catch {
    return -1;
  }
}

/** Whether the template's text for a turn says what the model wrote. */
function meansTheSame(turn: string, record: ReplayRecord, replay: ReplaySource, startsInReasoning: boolean): boolean {
  // Ids the template writes into the turn (Mistral) must be the ones the model wrote.
  if (record.calls.some((c) => turn.includes(c.id) && !record.text.includes(c.id))) return false;
  const parsed = parseToolCalls(turn, { format: replay.format, tools: replay.tools, startsInReasoning, mintId: () => 'replay' });
  return parsed.content.trim() === record.content.trim()
    && parsed.reasoning.trim() === record.reasoning.trim()
    && parsed.calls.length === record.calls.length
    && parsed.calls.every((c, k) => c.name === record.calls[k]!.name && sameJson(parseJson(c.arguments), parseJson(record.calls[k]!.arguments)));
}

/**
 * The longest run of the sampled tokens, from the first, that spells a start of `text` and ends
 * between two characters (a token that begins with a UTF-8 continuation byte reads as U+FFFD).
 */
function sameStart(tokens: readonly number[], text: string, tokenizer: Tokenizer): { tokens: number; chars: number } {
  const decoder = tokenizer.createDecoder();
  let chars = 0;
  let best = { tokens: 0, chars: 0 };
  for (let k = 0; k < tokens.length; k++) {
    const piece = decoder.push(tokens[k]!);
    if (!text.startsWith(piece, chars)) break;
    chars += piece.length;
    const next = tokens[k + 1];
    if (next === undefined || !tokenizer.tokenToPiece(next).startsWith('\uFFFD')) best = { tokens: k + 1, chars };
  }
  return best;
}

/** The offset in `escaped` that is `chars` characters of unescaped text after `from`. */
function escapedOffset(escaped: string, from: number, chars: number, sentinel: string): number {
  let i = from;
  for (let n = 0; n < chars; i++) if (escaped[i] !== sentinel) n++;
  while (escaped[i] === sentinel) i++;
  return i;
}

function messageStarts(messages: readonly object[], rendered: string, render: (m: readonly object[], gen: boolean) => string): number[] {
  const starts = [0];
  for (let j = 1; j <= messages.length; j++) {
    let at = starts[j - 1]!;
    try {
      const prefix = render(messages.slice(0, j), false);
      // Where the two renderings part, the character belongs to an earlier message (one the
      // template renders differently once more follow), so message j starts after it.
      at = Math.max(at, rendered.startsWith(prefix) ? prefix.length : commonPrefix(prefix, rendered) + 1);
    } catch {
      // A template may refuse a partial conversation (strict alternation); keep the previous start.
    }
    starts.push(at);
  }
  return starts;
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

function* stringsOf(value: unknown): Generator<string> {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') yield v;
    else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        yield k;
        stack.push(child);
      }
    }
  }
}

/** A copy of a JSON-like value with every string (keys too) mapped. Depth is bounded by the callers' checks. */
function mapStrings<T>(value: T, f: (s: string) => string): T {
  if (typeof value === 'string') return f(value) as T;
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [f(k), mapStrings(v, f)])) as T;
  }
  return value;
}
