// A model's chat template, parsed once and rendered with @huggingface/jinja the way Hugging Face
// transformers renders it in Python: trim_blocks + lstrip_blocks, `raise_exception`,
// `strftime_now`, a key-order-keeping `tojson`, and Python's semantics where the engines differ.
import { createHash } from 'node:crypto';
import { Environment, Interpreter, parse, tokenize } from '@huggingface/jinja';
import { ChatTemplateError, ChatTemplateSyntaxError } from './errors.js';
import { renderThread, renderThreadAvailable } from './render-thread.js';
import { strftime } from './strftime.js';
import {
  checkFilter, type Instrumentable, MAIN_THREAD_RENDER_MS, MAX_TEMPLATE_ITEMS, MAX_TEMPLATE_MS, RenderBudget, RenderMovesOffThread, renderTimeLimit,
  TemplateLimitError,
} from './template-limits.js';

type Program = ReturnType<typeof parse>;
interface RuntimeValueLike { type: string; value: unknown }
interface FilterNodeLike { type: string; value?: unknown; callee?: { type: string; value?: unknown }; args?: unknown[] }
type ApplyFilter = (operand: RuntimeValueLike, filter: FilterNodeLike, env: Environment) => RuntimeValueLike;

/** Longest template source accepted (real templates are under 20 KB; this bounds hostile files). */
export const MAX_TEMPLATE_BYTES = 1 << 20;

// Where the JS engine and Python's jinja2 disagree on the templates kiln ships goldens for, the
// Python behaviour wins (it is what the models were trained on):
// - `x|string` is Python's str(x): True/False, where the JS engine writes true/false (Qwen3-Coder
//   renders boolean tool arguments this way);
// - an undefined value is "" under string filters (Hermes trims a missing `description`) and an
//   empty sequence in a for loop (Hermes loops over `tools` when there are none).
type Evaluate = (node: unknown, env: Environment) => RuntimeValueLike;
type EvaluateFor = (node: ForNodeLike, env: Environment) => RuntimeValueLike;
interface ForNodeLike { iterable: { type: string; lhs?: unknown } }
interface InterpreterInternals extends Instrumentable { applyFilter: ApplyFilter; evaluateFor: EvaluateFor }

const STRING_FILTERS = new Set(['string', 'trim', 'lower', 'upper', 'title', 'capitalize', 'length']);
const EMPTY_STRING = { type: 'StringLiteral', value: '' };
const EMPTY_LIST = { type: 'ArrayLiteral', value: [] };
const base = Interpreter.prototype as unknown as InterpreterInternals;

const applyFilter: ApplyFilter = function (this: InterpreterInternals, operand, filter, env) {
  const name = filter.type === 'Identifier' ? filter.value : undefined;
  if (operand.type === 'UndefinedValue' && typeof name === 'string' && STRING_FILTERS.has(name)) {
    operand = this.evaluate(EMPTY_STRING, env);
  }
  // Filters that multiply sizes are measured first (see template-limits.ts).
  const filterName = name ?? (filter.type === 'CallExpression' ? filter.callee?.value : undefined);
  if (typeof filterName === 'string') {
    const [args, kwargs] = filter.type === 'CallExpression' ? this.evaluateArguments(filter.args ?? [], env) : [[], new Map()];
    checkFilter(filterName, operand, args, kwargs);
  }
  const out = base.applyFilter.call(this, operand, filter, env);
  if (name === 'string' && operand.type === 'BooleanValue') out.value = operand.value ? 'True' : 'False';
  return out;
};

const evaluateFor: EvaluateFor = function (this: InterpreterInternals, node, env) {
  const select = node.iterable.type === 'SelectExpression';
  const source = select ? node.iterable.lhs : node.iterable;
  // Evaluating the iterable twice is safe: templates iterate over names and member lookups.
  const iterable = this.evaluate(source, env);
  this.budget?.chargeLoop(iterable);
  if (iterable.type === 'UndefinedValue') {
    node = { ...node, iterable: select ? { ...node.iterable, lhs: EMPTY_LIST } : EMPTY_LIST };
  }
  return base.evaluateFor.call(this, node, env);
};

/** Thrown by the template's own `raise_exception(...)`. */
class TemplateRaised extends Error {}

export interface RenderContext {
  /** Messages in the shape templates expect (see toTemplateMessages). */
  messages: readonly object[];
  tools?: readonly object[] | undefined;
  addGenerationPrompt: boolean;
  /** Extra template variables (`enable_thinking`, `date_string`, ...). */
  variables?: Record<string, unknown>;
  /** The time `strftime_now` reports; default now. */
  now?: Date;
  /** Wall time of this render; default renderTimeLimit() of the conversation's size. */
  maxRenderMs?: number;
  /**
   * On the event loop: stop with RenderMovesOffThread after MAIN_THREAD_RENDER_MS (when a render
   * thread exists), and send this template's later renders to the render thread.
   */
  onMainThread?: boolean;
}

export interface ChatTemplateOptions {
  bosToken?: string | null;
  eosToken?: string | null;
  /** Wall time of one render; default renderTimeLimit() of the conversation's size. */
  maxRenderMs?: number;
}

/** Conversations with more messages than this render on the render thread (when there is one). */
export const OFF_THREAD_MESSAGES = 64;

export class ChatTemplate {
  /** sha256 of the source, hex: part of the replay cache's key. */
  readonly hash: string;
  private readonly program: Program;
  /** Set once a render went past a limit or held the event loop too long: this template's renders move to the render thread. */
  private hostile = false;

  constructor(readonly source: string, private readonly options: ChatTemplateOptions = {}) {
    if (typeof source !== 'string' || source.length === 0) throw new ChatTemplateSyntaxError('the chat template is empty or not a string');
    if (Buffer.byteLength(source) > MAX_TEMPLATE_BYTES) {
      throw new ChatTemplateSyntaxError(`the chat template has ${Buffer.byteLength(source)} bytes; at most ${MAX_TEMPLATE_BYTES} are accepted`);
    }
    this.hash = createHash('sha256').update(source).digest('hex');
    try {
      this.program = parse(tokenize(source, { lstrip_blocks: true, trim_blocks: true }));
    } catch (e) {
      throw new ChatTemplateSyntaxError(`the chat template does not parse: ${(e as Error).message}`, e);
    }
  }

  /**
   * Renders two short conversations (one with a tool) to find, at load, a template that cannot
   * render even those within its limits. A conversation the template refuses is not an error here.
   */
  probe(): void {
    const tool = { type: 'function', function: { name: 'get_time', description: 'The current time.', parameters: { type: 'object', properties: {} } } };
    const cases = [
      { messages: [{ role: 'user', content: 'Hello' }] },
      { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], tools: [tool] },
    ];
    for (const c of cases) {
      try {
        // At load the event loop serves nothing yet: the probe may take the longest any render may.
        this.render({ ...c, addGenerationPrompt: true, maxRenderMs: MAX_TEMPLATE_MS });
      } catch (e) {
        if (e instanceof TemplateLimitError) {
          throw new ChatTemplateSyntaxError(`the chat template cannot render a two-message conversation within its limits: ${e.message}`, e);
        }
      }
    }
  }

  /** What the render thread needs to build the same template. */
  get renderOptions(): ChatTemplateOptions {
    return { ...this.options };
  }

  /**
   * Whether a conversation of this many messages should render on the render thread: a long one
   * (its render takes the event loop tens of milliseconds), or any once this template has gone
   * past a limit or held the event loop past MAIN_THREAD_RENDER_MS.
   */
  rendersOffThread(messages: number): boolean {
    return renderThreadAvailable() && (this.hostile || messages > OFF_THREAD_MESSAGES);
  }

  /** Whether this template's renders have moved to the render thread (see rendersOffThread). */
  get movedOffThread(): boolean {
    return this.hostile && renderThreadAvailable();
  }

  /** Renders each context on the render thread; a context the template refuses, or that passes a limit, gives its error. */
  renderOffThread(contexts: RenderContext[]): Promise<Array<string | Error>> {
    return renderThread.render(this, contexts);
  }

  render(ctx: RenderContext): string {
    const env = new Environment();
    const now = ctx.now ?? new Date();
    const globals: Record<string, unknown> = {
      true: true, false: false, none: null, True: true, False: false, None: null,
      range: pythonRange,
      raise_exception: (message: unknown) => {
        throw new TemplateRaised(String(message));
      },
      strftime_now: (format: unknown) => strftime(now, String(format)),
    };
    if (this.options.bosToken != null) globals['bos_token'] = this.options.bosToken;
    if (this.options.eosToken != null) globals['eos_token'] = this.options.eosToken;
    for (const [k, v] of Object.entries(globals)) env.set(k, v);
    for (const [k, v] of Object.entries(ctx.variables ?? {})) env.set(k, v);
    env.set('messages', ctx.messages);
    if (ctx.tools !== undefined && ctx.tools.length > 0) env.set('tools', ctx.tools);
    env.set('add_generation_prompt', ctx.addGenerationPrompt);
    try {
      // The overrides go on the instance: the package's types do not resolve under NodeNext, so a
      // subclass would not type-check, and patching the shared prototype would change other users.
      const interpreter = new Interpreter(env) as unknown as InterpreterInternals & { run(p: Program): RuntimeValueLike };
      interpreter.applyFilter = applyFilter;
      interpreter.evaluateFor = evaluateFor;
      const slice = ctx.onMainThread === true && renderThreadAvailable() ? MAIN_THREAD_RENDER_MS : Infinity;
      new RenderBudget(this.options.maxRenderMs ?? ctx.maxRenderMs ?? renderTimeLimit(ctx.messages.length), undefined, slice).install(interpreter);
      const out = interpreter.run(this.program).value;
      if (typeof out !== 'string') throw new Error('the template rendered no text');
      return out;
    } catch (e) {
      if (e instanceof TemplateRaised) throw new ChatTemplateError(e.message, true);
      if (e instanceof TemplateLimitError || e instanceof RenderMovesOffThread) {
        this.hostile = true;
        throw e;
      }
      if (e instanceof RangeError && /string length/i.test(e.message)) {
        this.hostile = true;
        throw new TemplateLimitError('the longest string V8 holds', e.message);
      }
      // A RangeError here is the engine's recursion on absurd nesting; any other error is the
      // template failing on this conversation's shape.
      throw new ChatTemplateError(e instanceof Error ? e.message : String(e), false, e);
    }
  }
}

function pythonRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (!Number.isInteger(start) || !Number.isInteger(stop) || !Number.isInteger(step) || step === 0) {
    throw new TemplateRaised('range() takes integers and a non-zero step');
  }
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push(i);
    if (out.length > MAX_TEMPLATE_ITEMS) throw new TemplateLimitError('MAX_TEMPLATE_ITEMS', `range() of more than ${MAX_TEMPLATE_ITEMS} items`);
  }
  return out;
}
