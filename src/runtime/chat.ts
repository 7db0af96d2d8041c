// runtime.chat() and chatStream(): OpenAI-shaped messages in; the model's template renders them,
// recorded assistant turns are replayed token for token, one generation runs on the best-matching
// slot, and its text streams as typed events: through the tool-call streamer when tools are in
// play, straight through (thinking split off) when none are. A turn that ends in tool calls is
// recorded for exact replay under the ids kiln minted.
import { createHash } from 'node:crypto';
import { buildPrompt, buildPromptAsync, type BuildPromptInput, type BuiltPrompt } from '../chat/build-prompt.js';
import { ChatTemplate } from '../chat/chat-template.js';
import { NoChatTemplateError } from '../chat/errors.js';
import type { AssistantReply, ChatMessage, ToolChoice } from '../chat/messages.js';
import { PromptTokenizer, spellTokens } from '../chat/prompt-tokenizer.js';
import { ReplayCache, type ReplayCacheOptions } from '../chat/replay-cache.js';
import { ThinkingSplitter } from '../chat/thinking-splitter.js';
import { AnswerGrammarConstraint } from '../chat/answer-grammar-constraint.js';
import { argumentsSchema, callBodyGrammar } from '../chat/call-body-grammar.js';
import { StrictCallConstraint } from '../chat/strict-call-constraint.js';
import { ToolChoiceConstraint } from '../chat/tool-choice-constraint.js';
import { compileDefinition, compileGrammar, type GrammarSpec } from '../grammar/compile-grammar.js';
import { GrammarError, UnsupportedSchemaError } from '../grammar/errors.js';
import type { GrammarMatcher } from '../grammar/matcher.js';
import { checkDepth, templateQuirks, toTemplateMessages, type TemplateQuirks } from '../chat/template-messages.js';
import { InvalidArgumentError } from '../errors.js';
import { checkPromptChars, ContextLengthExceededError } from '../generate/errors.js';
import type { GenerateRequest, GenerateResult, Timings, TokenLogprob, Usage } from '../generate/generate.js';
import type { GgufFile } from '../gguf/types.js';
import type { SamplingOptions } from '../sampling/sampling-options.js';
import type { Tokenizer } from '../tokenizer/tokenizer.js';
import {
  detectToolCallFormat, IncrementalToolCallStreamer, TOOL_CALL_FORMATS, type OpenAITool, type ParsedToolCalls, type ToolCallEvent, type ToolCallFormat,
} from '../tool-calls/index.js';
import { AsyncQueue } from './async-queue.js';
import { ToolCallFilter } from './tool-call-filter.js';
import { explainPromptCache, type CacheExplanation } from './explain-cache.js';

/** A streaming stage from generated text to chat events. */
interface TextStage {
  push(text: string): ToolCallEvent[];
  finish(): ToolCallEvent[];
  /** After finish(): the reply as sent. */
  readonly result: ParsedToolCalls | null;
}

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'abort';

/**
 * What the answer must be: JSON matching a schema (`whitespace` 'compact', the default, or
 * 'flexible'), any JSON object, or free text. The schema is always enforced; `strict` and `name`
 * are accepted as OpenAI sends them.
 */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; schema: unknown; strict?: boolean; name?: string; whitespace?: 'compact' | 'flexible' };

export interface ChatOptions extends SamplingOptions {
  messages: ChatMessage[];
  tools?: OpenAITool[];
  /**
   * Default 'auto'. 'none' hides the tools. 'required': the reply opens with a call to one of the
   * tools (the model picks which), once any thinking is over. A named function: the reply opens
   * with a call to that tool, and only calls to it reach the reply (calls to the others are never
   * streamed and leave no trace). Either way the prompt declares every tool (it does not change
   * with the choice, so the cache holds), the call's opening up to its arguments is forced token
   * by token, and the arguments are the model's (see ToolChoiceConstraint).
   */
  toolChoice?: ToolChoice;
  /** false: only the first tool call reaches the reply, and generation stops once it is complete. Default true. */
  parallelToolCalls?: boolean;
  /** Default 256. */
  maxTokens?: number;
  stop?: string[];
  signal?: AbortSignal;
  /** Passed to the template as `enable_thinking` (Qwen3). */
  enableThinking?: boolean;
  /** More template variables (`date_string`, `builtin_tools`, ...). */
  templateVariables?: Record<string, unknown>;
  /** Use recorded turns for this request (default true when the runtime keeps a replay cache). */
  replay?: boolean;
  /**
   * Report each generated token's log-probability and this many most likely alternatives (0 to
   * 20), from the model's raw distribution (before penalties, bias and temperature). Every
   * generated token has an entry, reasoning and tool-call text included.
   */
  logprobs?: number;
  /** Tests and benchmarks: token ids emitted instead of sampled ones (see GenerateRequest). */
  forcedTokens?: readonly number[];
  /** Constrains the answer (after any thinking) to JSON; see ResponseFormat. Not with `grammar`. */
  responseFormat?: ResponseFormat;
  /** Constrains the answer (after any thinking) to a grammar: `{ gbnf }`, `{ regex }` or `{ jsonSchema }`. */
  grammar?: GrammarSpec;
}

export interface ChatResult {
  message: AssistantReply;
  finishReason: ChatFinishReason;
  /** The stop string that ended the reply (not part of it); null when none did. */
  stopSequence: string | null;
  /** With `logprobs`: one entry per generated token. */
  logprobs?: TokenLogprob[];
  usage: Usage;
  timings: Timings;
}

/**
 * The events of chatStream(): `start` once the prompt is evaluated (before any text), the reply's
 * content, reasoning and tool-call events (with `logprobs`, each token's `logprob` before its
 * text), then `done` with the whole result.
 */
export type ChatStreamEvent =
  | { type: 'start'; promptTokens: number; cachedTokens: number }
  | ToolCallEvent
  | { type: 'logprob'; logprob: TokenLogprob }
  | { type: 'done'; result: ChatResult };

export interface ChatLogger {
  debug?(msg: string, fields?: object): void;
  warn(msg: string, fields?: object): void;
  error(msg: string, fields?: object): void;
}

/** What the chat layer needs from the runtime. */
export interface ChatHost {
  readonly tokenizer: Tokenizer;
  readonly gguf: GgufFile;
  /** Positions per sequence: a longer prompt is refused before it is tokenized to the end. */
  readonly contextSize: number;
  /** Runs one generation on the slot whose cache best matches the prompt. */
  generate(req: GenerateRequest): Promise<GenerateResult>;
  /** Every slot's cached tokens. */
  cachedTokens(): ReadonlyArray<readonly number[]>;
}

export interface ChatConfig {
  /** Overrides the model's `tokenizer.chat_template`. */
  chatTemplate?: string;
  /** Overrides the format detected from the template. */
  toolCallFormat?: ToolCallFormat;
  /** Replay cache size and file; false turns exact replay off. */
  replay?: ReplayCacheOptions | false;
  logger?: ChatLogger;
}

export type ExplainCacheOptions = Omit<ChatOptions, 'messages' | 'signal' | 'forcedTokens'>;

const SILENT: ChatLogger = { warn() {}, error() {} };
const DEFAULT_MAX_TOKENS = 256;

interface PreparedChat {
  prompt: BuiltPrompt;
  tools: OpenAITool[];
  /** A named tool choice: the only tool whose calls reach the reply. */
  only: string | undefined;
  /** 'required' or named: the reply must open with a call. */
  mustCall: boolean;
  replay: boolean;
  /** The answer's grammar (responseFormat or grammar), if any. */
  answer: GrammarMatcher | null;
  /** Tools whose calls are constrained to their schemas wherever the model writes them. */
  strict: Set<string>;
}

export class ChatEngine {
  readonly template: ChatTemplate;
  /** How this model writes tool calls; null when its template has none. */
  readonly format: ToolCallFormat | null;
  readonly replayCache: ReplayCache | null;
  private readonly quirks: TemplateQuirks;
  private readonly prompts: PromptTokenizer;
  private readonly scope: string;
  private readonly logger: ChatLogger;
  private requests = 0;

  constructor(private readonly host: ChatHost, config: ChatConfig = {}) {
    const fromFile = host.gguf.metadata.get('tokenizer.chat_template');
    const source = config.chatTemplate ?? (typeof fromFile === 'string' ? fromFile : undefined);
    if (source === undefined) throw new NoChatTemplateError();
    const tok = host.tokenizer;
    this.template = new ChatTemplate(source, {
      bosToken: tok.bosId === null ? null : tok.tokenToPiece(tok.bosId),
      eosToken: tok.eosId === null ? null : tok.tokenToPiece(tok.eosId),
    });
    this.template.probe();
    if (config.toolCallFormat !== undefined && !TOOL_CALL_FORMATS.includes(config.toolCallFormat)) {
      throw new InvalidArgumentError(`toolCallFormat must be one of ${TOOL_CALL_FORMATS.join(', ')}`, 'toolCallFormat');
    }
    this.format = config.toolCallFormat ?? detectToolCallFormat(source);
    this.quirks = templateQuirks(source);
    this.prompts = new PromptTokenizer(tok);
    this.logger = config.logger ?? SILENT;
    this.scope = createHash('sha256').update(modelKey(host.gguf)).update(this.template.hash).digest('hex').slice(0, 32);
    this.replayCache = config.replay === false ? null : new ReplayCache({
      ...config.replay,
      onError: (err) => this.logger.warn('replay cache file disabled', { error: err.message }),
    });
  }

  async chat(options: ChatOptions): Promise<ChatResult> {
    let result: ChatResult | undefined;
    for await (const e of this.stream(options)) if (e.type === 'done') result = e.result;
    return result!;
  }

  /** Events as they are generated; breaking out of the loop cancels the generation. */
  async *stream(options: ChatOptions): AsyncGenerator<ChatStreamEvent> {
    const prepared = await this.prepareAsync(options);
    const queue = new AsyncQueue<ChatStreamEvent>();
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) stop.abort();
    const run = this.generate(options, prepared, stop, (e) => queue.push(e)).then(
      (result) => {
        queue.push({ type: 'done', result });
        queue.end();
      },
      (err: unknown) => queue.fail(err),
    );
    try {
      yield* queue;
    } finally {
      stop.abort();
      options.signal?.removeEventListener('abort', onAbort);
      await run;
    }
  }

  /** Which slot a chat with these messages would use, how much of its prompt is cached, and where it differs. */
  explain(messages: ChatMessage[], options: ExplainCacheOptions = {}): CacheExplanation {
    const { input } = this.promptInput({ ...options, messages });
    return explainPromptCache(buildPrompt(input), this.host.cachedTokens(), this.host.tokenizer);
  }

  /** The prompt built and tokenized without holding the event loop; a prompt over the context is refused as soon as it is. */
  private async prepareAsync(options: ChatOptions): Promise<PreparedChat> {
    const { input, ...rest } = this.promptInput(options);
    const contextSize = this.host.contextSize;
    const prompt = await buildPromptAsync(input, contextSize);
    if (prompt.tokens.length > contextSize) throw new ContextLengthExceededError(prompt.tokens.length, contextSize, { atLeast: true });
    return { prompt, ...rest };
  }

  private promptInput(options: ChatOptions): Omit<PreparedChat, 'prompt'> & { input: BuildPromptInput } {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('chat options must be an object');
    const messages = toTemplateMessages(options.messages, this.quirks);
    checkPromptChars([messages, options.tools ?? []], this.host.contextSize, this.host.tokenizer.maxTokenChars);
    const { tools, only, mustCall } = chosenTools(checkTools(options.tools), options.toolChoice);
    if (tools.length > 0 && this.format === null) {
      throw new InvalidArgumentError("this model's chat template has no tool-call format; load it with a toolCallFormat or send no tools", 'tools');
    }
    if (options.parallelToolCalls !== undefined && typeof options.parallelToolCalls !== 'boolean') {
      throw new InvalidArgumentError('parallelToolCalls must be a boolean', 'parallelToolCalls');
    }
    const maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new InvalidArgumentError(`maxTokens must be a non-negative integer, got ${maxTokens}`, 'maxTokens');
    const stop = options.stop ?? [];
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s.length === 0)) {
      throw new InvalidArgumentError('stop must be an array of non-empty strings', 'stop');
    }
    const variables: Record<string, unknown> = { ...checkVariables(options.templateVariables) };
    if (options.enableThinking !== undefined) variables['enable_thinking'] = Boolean(options.enableThinking);
    const replay = this.replayCache !== null && options.replay !== false;
    const input: BuildPromptInput = {
      template: this.template,
      prompts: this.prompts,
      messages,
      tools: tools.length > 0 ? tools : undefined,
      variables,
      now: new Date(),
      replay: replay && this.format !== null
        ? { cache: this.replayCache!, scope: this.scope, format: this.format, tools }
        : null,
    };
    const answer = this.answerGrammar(options);
    const strict = new Set<string>();
    tools.forEach((t, i) => {
      if (t.function.strict !== true) return;
      strict.add(t.function.name);
      try {
        this.callBody(t, this.format === 'mistral' ? '[TOOL_CALLS]' : '', true);
      } catch (err) {
        if (err instanceof UnsupportedSchemaError || err instanceof GrammarError) err.param = `tools[${i}].function.parameters`;
        throw err;
      }
    });
    return { input, tools, only, mustCall, replay, answer, strict };
  }

  private answerGrammar(options: ChatOptions): GrammarMatcher | null {
    const { responseFormat: format, grammar } = options;
    if (format !== undefined && grammar !== undefined) throw new InvalidArgumentError('send responseFormat or grammar, not both', 'grammar');
    if (grammar !== undefined) return withParam(() => compileGrammar(grammar, this.host.tokenizer), 'grammar');
    if (format === undefined || format === null) return null;
    if (typeof format !== 'object') throw new InvalidArgumentError("responseFormat must be { type: 'text' | 'json_object' | 'json_schema' }", 'responseFormat');
    switch (format.type) {
      case 'text':
        return null;
      case 'json_object':
        return compileGrammar({ jsonSchema: { type: 'object' } }, this.host.tokenizer);
      case 'json_schema': {
        if (format.schema === undefined) throw new InvalidArgumentError("responseFormat { type: 'json_schema' } needs a schema", 'responseFormat.schema');
        const spec: GrammarSpec = format.whitespace !== undefined ? { jsonSchema: format.schema, whitespace: format.whitespace } : { jsonSchema: format.schema };
        return withParam(() => compileGrammar(spec, this.host.tokenizer), 'responseFormat.schema');
      }
      default:
        throw new InvalidArgumentError("responseFormat.type must be 'text', 'json_object' or 'json_schema'", 'responseFormat.type');
    }
  }

  /** The grammar of a call's body after `opening`, compiled for this vocabulary (and remembered). */
  private callBody(tool: OpenAITool, opening: string, leadingSpace: boolean): GrammarMatcher {
    const format = this.format!;
    const spelling = opening.endsWith('[CALL_ID]') ? 'id' : opening.includes('[{') ? 'list' : 'plain';
    const key = `call\0${format}\0${spelling}\0${leadingSpace}\0${JSON.stringify(argumentsSchema(tool))}`;
    return compileDefinition(() => callBodyGrammar(format, tool, opening, leadingSpace), this.host.tokenizer, key);
  }

  /** A forced call's body: the tool's schema where kiln can enforce it, any object where it cannot. */
  private forcedBody(tool: OpenAITool, opening: string): GrammarMatcher {
    try {
      return this.callBody(tool, opening, false);
    } catch (err) {
      if (!(err instanceof UnsupportedSchemaError || err instanceof GrammarError)) throw err;
      this.logger.warn('tool schema not enforceable; the forced call takes any arguments object', { tool: tool.function.name, error: err.message });
      return this.callBody({ type: 'function', function: { name: tool.function.name } }, opening, false);
    }
  }

  private async generate(options: ChatOptions, prepared: PreparedChat, stop: AbortController, emit: (e: ChatStreamEvent) => void): Promise<ChatResult> {
    const { prompt, tools, only, mustCall, answer, strict } = prepared;
    const requestId = `chat-${++this.requests}`;
    const { maxTokens = DEFAULT_MAX_TOKENS, stop: stopStrings = [], signal, forcedTokens, parallelToolCalls, logprobs } = options;
    if (this.logger.debug !== undefined) {
      const why = explainPromptCache(prompt, this.host.cachedTokens(), this.host.tokenizer);
      this.logger.debug(why.summary, { requestId, divergence: why.divergence });
    }
    // With tools in play the text goes through the tool-call streamer; without, it is the plain
    // token stream (thinking split off only where that holds nothing back, see ThinkingSplitter).
    const stage: TextStage = tools.length > 0
      ? new IncrementalToolCallStreamer({ format: this.format!, tools, startsInReasoning: prompt.startsInReasoning, logger: this.logger, requestId })
      : new ThinkingSplitter({ startsInReasoning: this.quirks.thinks && prompt.startsInReasoning, opensReasoning: this.quirks.thinks });
    const choice = { only, single: parallelToolCalls === false };
    const filter = ToolCallFilter.isIdentity(choice) ? null : new ToolCallFilter(choice);
    let firstCallDone = false;
    const sent = new SentReply();
    const send = (events: ToolCallEvent[]) => {
      for (const raw of events) {
        const e = filter === null ? raw : filter.push(raw);
        if (e === null) continue;
        sent.push(e);
        emit(e);
        if (e.type === 'tool_call_end' && choice.single) {
          firstCallDone = true;
          stop.abort();
        }
      }
    };
    const constraint = mustCall ? this.callConstraint(prompt, only === undefined ? tools.map((t) => t.function.name) : [only], tools, strict)
      : answer !== null ? new AnswerGrammarConstraint({ matcher: answer, startsInReasoning: prompt.startsInReasoning, mayThink: this.mayThink(prompt), encode: (text) => this.prompts.encode(text, null) })
        : strict.size > 0 ? this.strictConstraint(prompt, tools, strict)
          : null;
    const result = await this.host.generate({
      prompt: prompt.tokens,
      maxTokens,
      sampling: samplingOf(options),
      stop: stopStrings,
      signal: stop.signal,
      onStart: ({ promptTokens, cachedTokens }) => emit({ type: 'start', promptTokens, cachedTokens }),
      onText: (text) => {
        if (!firstCallDone) send(stage.push(text));
      },
      ...(forcedTokens ? { forcedTokens } : {}),
      ...(constraint !== null ? { constraint } : {}),
      ...(logprobs !== undefined ? { logprobs, onLogprob: (logprob: TokenLogprob) => emit({ type: 'logprob', logprob }) } : {}),
      // The template's end of the turn is rendered only for a reply that reaches it.
      endOfTurn: () => prompt.turnEnd(),
    });
    // A call kiln was writing when max_tokens cut the reply ends as streamed: nothing kiln forced
    // becomes content, and the open call keeps the arguments sent so far.
    const cut = result.finishReason === 'length' && (constraint as { inCall?: boolean } | null)?.inCall === true;
    if (!cut) send(stage.finish());
    const final = cut ? sent.reply() : stage.result!;
    const calls = filter === null || cut ? final.calls : final.calls.filter((c) => filter.passedIds.includes(c.id));
    const message: AssistantReply = { role: 'assistant', content: final.content };
    if (final.reasoning !== '') message.reasoning = final.reasoning;
    if (calls.length > 0) {
      message.toolCalls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    }
    const finishReason: ChatFinishReason = signal?.aborted ? 'abort'
      : firstCallDone ? 'tool_calls'
        : result.finishReason === 'abort' ? 'abort'
          : result.finishReason === 'length' ? 'length'
            : calls.length > 0 ? 'tool_calls' : 'stop';
    // A reply cut off in a call is not recorded for replay: its last call never ended.
    // A turn with dropped calls is not recorded: the client never sees them, so its copy of the
    // turn means less than the sampled tokens say, and replaying them would put them back.
    if (prepared.replay && !cut && finishReason === 'tool_calls' && calls.length === final.calls.length) {
      this.replayCache!.add({
        scope: this.scope,
        calls: final.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
        content: final.content,
        reasoning: final.reasoning,
        tokens: result.tokens,
        text: spellTokens(this.host.tokenizer, result.tokens),
        promptChars: prompt.renderedChars,
        promptHash: prompt.renderedHash,
      });
    }
    const out: ChatResult = { message, finishReason, stopSequence: result.stopSequence, usage: result.usage, timings: result.timings };
    if (result.logprobs !== undefined) out.logprobs = result.logprobs;
    return out;
  }

  /**
   * Forces the reply to open with a call to one of `names`, after any thinking; the call's body
   * follows the tool's schema. Later calls to strict tools are constrained too.
   */
  private callConstraint(prompt: BuiltPrompt, names: string[], tools: OpenAITool[], strict: Set<string>): ToolChoiceConstraint {
    return new ToolChoiceConstraint({
      format: this.format!,
      names,
      chatTemplate: this.template.source,
      vocabSize: this.host.tokenizer.vocabSize,
      encode: (text) => this.prompts.encode(text, null),
      startsInReasoning: prompt.startsInReasoning,
      mayThink: this.mayThink(prompt),
      callBody: (name, opening) => this.forcedBody(tools.find((t) => t.function.name === name)!, opening),
      ...(strict.size > 0 ? { after: this.strictConstraint(prompt, tools, strict, false) } : {}),
    });
  }

  /** Constrains the body of every call the model writes to a strict tool. */
  private strictConstraint(prompt: BuiltPrompt, tools: OpenAITool[], strict: Set<string>, fromStart = true): StrictCallConstraint {
    return new StrictCallConstraint({
      format: this.format!,
      strict,
      callBody: (name, opening) => this.callBody(tools.find((t) => t.function.name === name)!, opening, !/\]$|\n$/.test(opening)),
      startsInReasoning: fromStart && prompt.startsInReasoning,
      mayThink: fromStart && this.mayThink(prompt),
      onUnconstrained: (name) => this.logger.warn('a strict tool call began with text its schema refuses; its arguments are left free', { tool: name }),
    });
  }

  /** A thinking template that closed an empty block (thinking turned off) leaves none to open. */
  private mayThink(prompt: BuiltPrompt): boolean {
    return this.quirks.thinks && !prompt.startsInReasoning && !/<\/think>\s*$/.test(prompt.text);
  }
}

/** Runs a grammar compile, naming the request field in its error. */
function withParam<T>(compile: () => T, param: string): T {
  try {
    return compile();
  } catch (err) {
    if (err instanceof UnsupportedSchemaError || err instanceof GrammarError) err.param = param;
    throw err;
  }
}

/** The reply as the client received it, from the events sent (a reply cut off in a call). */
class SentReply {
  private content = '';
  private reasoning = '';
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();

  push(e: ToolCallEvent): void {
    if (e.type === 'content') this.content += e.text;
    else if (e.type === 'reasoning') this.reasoning += e.text;
    else if (e.type === 'tool_call_start') this.calls.set(e.index, { id: e.id, name: e.name, arguments: '' });
    else if (e.type === 'tool_call_arguments') this.calls.get(e.index)!.arguments += e.delta;
  }

  reply(): ParsedToolCalls {
    return { content: this.content, reasoning: this.reasoning, calls: [...this.calls.values()] };
  }
}

function checkTools(tools: unknown): OpenAITool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new InvalidArgumentError('tools must be an array', 'tools');
  const names = new Set<string>();
  tools.forEach((t: unknown, i) => {
    const tool = t as OpenAITool | null;
    const at = `tools[${i}]`;
    if (tool === null || typeof tool !== 'object' || tool.type !== 'function' || tool.function === null || typeof tool.function !== 'object') {
      throw new InvalidArgumentError(`${at} must be {type: 'function', function: {name, description?, parameters?}}`, at);
    }
    if (typeof tool.function.name !== 'string' || tool.function.name === '') throw new InvalidArgumentError(`${at}.function.name must be a non-empty string`, `${at}.function.name`);
    if (names.has(tool.function.name)) throw new InvalidArgumentError(`${at}.function.name '${tool.function.name}' is declared twice`, `${at}.function.name`);
    names.add(tool.function.name);
    checkDepth(tool, at);
  });
  return tools as OpenAITool[];
}

/** The tools the prompt declares and the streamer knows, and the one a named choice lets through. */
function chosenTools(tools: OpenAITool[], choice: ToolChoice | undefined): { tools: OpenAITool[]; only: string | undefined; mustCall: boolean } {
  if (choice === undefined || choice === 'auto') return { tools, only: undefined, mustCall: false };
  if (choice === 'none') return { tools: [], only: undefined, mustCall: false };
  if (choice === 'required') {
    if (tools.length === 0) throw new InvalidArgumentError("toolChoice is 'required' but no tools are declared", 'toolChoice');
    return { tools, only: undefined, mustCall: true };
  }
  if (choice !== null && typeof choice === 'object' && choice.type === 'function' && typeof choice.function?.name === 'string') {
    const name = choice.function.name;
    if (!tools.some((t) => t.function.name === name)) throw new InvalidArgumentError(`toolChoice names '${name}', which is not in tools`, 'toolChoice');
    return { tools, only: name, mustCall: true };
  }
  throw new InvalidArgumentError("toolChoice must be 'none', 'auto', 'required' or {type: 'function', function: {name}}", 'toolChoice');
}

function checkVariables(v: unknown): Record<string, unknown> {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError('templateVariables must be an object', 'templateVariables');
  checkDepth(v, 'templateVariables');
  return v as Record<string, unknown>;
}

const SAMPLING_KEYS = [
  'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'repeatLastN', 'presencePenalty', 'frequencyPenalty', 'logitBias', 'seed',
] as const satisfies ReadonlyArray<keyof SamplingOptions>;

function samplingOf(options: ChatOptions): SamplingOptions {
  const out: Record<string, unknown> = {};
  for (const k of SAMPLING_KEYS) if (options[k] !== undefined) out[k] = options[k];
  return out as SamplingOptions;
}

/** Identifies the weights and vocabulary: recorded token ids are only replayed on the same model. */
function modelKey(file: GgufFile): string {
  const h = createHash('sha256');
  h.update(`${file.fileSize}:${file.dataOffset}:${file.tensors.length}\n`);
  for (const t of file.tensors) h.update(`${t.name}:${t.type}:${t.dims.join('x')}:${t.offset}\n`);
  const tokens = file.metadata.get('tokenizer.ggml.tokens');
  if (Array.isArray(tokens)) for (const t of tokens) h.update(`${String(t)}\0`);
  return h.digest('hex');
}
