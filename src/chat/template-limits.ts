// Limits on one render of a chat template. A template comes from the model file or the operator,
// and nothing bounds what a Jinja program does: nested loops run for ever, `replace` and `indent`
// multiply a string's length in one call, `split` makes an array as long as a string. So every
// evaluation is counted and timed, every value the template builds is measured, and the calls that
// multiply sizes are measured before they run. A render past a limit stops with a
// TemplateLimitError. A render holds the event loop, so its time follows the conversation's size:
// TEMPLATE_MS_BASE plus TEMPLATE_MS_PER_MESSAGE per message, at most MAX_TEMPLATE_MS.
import { KilnError } from '../errors.js';

/** Evaluations of template nodes and loop iterations in one render (a 10,000-message conversation takes a few million). */
export const MAX_TEMPLATE_STEPS = 50_000_000;
/** Wall time of one render, whatever the conversation. */
export const MAX_TEMPLATE_MS = 2_000;
/**
 * Wall time of one render of a short conversation, and what each message adds: real templates take
 * well under a tenth of this (about 50 µs a message for Qwen3's on a 2-core VM, first renders included).
 */
export const TEMPLATE_MS_BASE = 100;
export const TEMPLATE_MS_PER_MESSAGE = 0.25;

/** The least a loop item costs the interpreter (a scope and its variables), on a fast machine. */
const LOOP_ITEM_MS = 0.0005;

/**
 * Wall time a render may hold the event loop when a render thread exists: past it, the render
 * stops (RenderMovesOffThread) and the template's renders move to the render thread, so no
 * template stalls other streams for longer than this.
 */
export const MAIN_THREAD_RENDER_MS = 40;

/** A render on the event loop ran past MAIN_THREAD_RENDER_MS: the caller renders it on the render thread instead. */
export class RenderMovesOffThread extends Error {
  constructor() {
    super(`the render held the event loop for ${MAIN_THREAD_RENDER_MS} ms; it moves to the render thread`);
  }
}

/** How long a render of a conversation of `messages` messages may take. */
export function renderTimeLimit(messages: number): number {
  return Math.min(MAX_TEMPLATE_MS, TEMPLATE_MS_BASE + TEMPLATE_MS_PER_MESSAGE * messages);
}
/** Longest string a render builds, its output included (the longest prompt a context holds is far shorter). */
export const MAX_TEMPLATE_CHARS = 64 << 20;
/**
 * Longest list a render builds (range(), split(), a string's characters), and so the most items
 * of one loop (its items are gathered between two checks of the clock). Above the 100,000
 * messages a conversation may have.
 */
export const MAX_TEMPLATE_ITEMS = 1 << 17;
/** Widest indentation (`indent`, `tojson(indent=...)`). */
export const MAX_TEMPLATE_INDENT = 256;

/** A chat template went past one of the limits above while rendering. */
export class TemplateLimitError extends KilnError {
  readonly code = 'chat_template_limit_exceeded';
  override readonly status = 500;
  override readonly type = 'server_error';
  constructor(readonly limit: string, readonly detail: string) {
    super(`The model's chat template went past ${limit} (${detail}) while rendering this conversation. The template is at fault: load the model with another one (--chat-template).`);
  }
}

interface ValueLike { type: string; value: unknown }
interface NodeLike { type: string; value?: unknown; callee?: NodeLike; object?: NodeLike; property?: NodeLike; computed?: boolean; args?: unknown[] }

/** The interpreter's methods the limits wrap (it calls them through `this`, so instance overrides apply). */
export interface Instrumentable {
  /** Set by RenderBudget.install. */
  budget?: RenderBudget;
  evaluate(node: unknown, env: unknown): ValueLike;
  evaluateBlock(statements: unknown[], env: unknown): ValueLike;
  evaluateCallExpression(node: NodeLike, env: unknown): ValueLike;
  evaluateArguments(args: unknown[], env: unknown): [ValueLike[], Map<string, ValueLike>];
}

export class RenderBudget {
  private steps = 0;
  private readonly deadline: number;
  /** Where the render stops with RenderMovesOffThread, before its own deadline (Infinity: never). */
  private readonly sliceEnd: number;

  constructor(private readonly maxMs = MAX_TEMPLATE_MS, private readonly maxSteps = MAX_TEMPLATE_STEPS, sliceMs = Infinity) {
    const now = performance.now();
    this.deadline = now + maxMs;
    this.sliceEnd = sliceMs < maxMs ? now + sliceMs : Infinity;
  }

  /** Puts the limits on an interpreter about to run. */
  install(interpreter: Instrumentable): void {
    const budget = this;
    interpreter.budget = this;
    const evaluate = interpreter.evaluate;
    const block = interpreter.evaluateBlock;
    const call = interpreter.evaluateCallExpression;
    interpreter.evaluate = function (this: Instrumentable, node, env) {
      budget.step();
      return checkValue(evaluate.call(this, node, env));
    };
    // Each loop iteration runs its body as a block, even an empty one that evaluates nothing.
    interpreter.evaluateBlock = function (this: Instrumentable, statements, env) {
      budget.step();
      return checkValue(block.call(this, statements, env));
    };
    interpreter.evaluateCallExpression = function (this: Instrumentable, node, env) {
      const callee = node.callee;
      // A string method that multiplies sizes: measure its operands first (evaluating them twice; template expressions are pure).
      if (callee?.type === 'MemberExpression' && !callee.computed && callee.property?.type === 'Identifier'
        && (callee.property.value === 'replace' || callee.property.value === 'split')) {
        const target = this.evaluate(callee.object, env);
        if (typeof target.value === 'string') {
          const [args] = this.evaluateArguments(node.args ?? [], env);
          checkStringCall(callee.property.value, target.value, args);
        }
      }
      return call.call(this, node, env);
    };
  }

  /**
   * Charges a loop's iterations before it runs: the interpreter gathers a loop's items (a scope
   * each) before the first iteration, unchecked, so a loop that cannot finish in the time left is
   * refused before it starts.
   */
  chargeLoop(iterable: ValueLike): void {
    const v = iterable.value;
    const n = Array.isArray(v) ? v.length : v instanceof Map ? v.size : 0;
    this.steps += n;
    this.check();
    const end = performance.now() + n * LOOP_ITEM_MS;
    if (end > this.sliceEnd && end <= this.deadline) throw new RenderMovesOffThread();
    if (end > this.deadline) throw new TemplateLimitError('MAX_TEMPLATE_MS', `${this.maxMs.toFixed(0)} ms for this conversation`);
  }

  private step(): void {
    if ((++this.steps & 4095) === 0) this.check();
  }

  private check(): void {
    if (this.steps > this.maxSteps) throw new TemplateLimitError('MAX_TEMPLATE_STEPS', `${this.maxSteps} evaluations`);
    const now = performance.now();
    if (now > this.deadline) throw new TemplateLimitError('MAX_TEMPLATE_MS', `${this.maxMs.toFixed(0)} ms for this conversation`);
    if (now > this.sliceEnd) throw new RenderMovesOffThread();
  }
}

/** Checks a filter's operand and arguments before it runs (`name` is the filter's). */
export function checkFilter(name: string, operand: ValueLike, args: ValueLike[], kwargs: Map<string, ValueLike>): void {
  const arg = (i: number, key: string) => (args[i] ?? kwargs.get(key))?.value;
  if (name === 'indent' || name === 'tojson') {
    const width = name === 'indent' ? arg(0, 'width') : kwargs.get('indent')?.value;
    if (typeof width === 'number' && width > MAX_TEMPLATE_INDENT) throw new TemplateLimitError('MAX_TEMPLATE_INDENT', `indent ${width}`);
    if (name === 'indent' && typeof operand.value === 'string' && typeof width === 'number' && width > 0) {
      const s = operand.value;
      // Each line grows by the width; counting stops once the lines are more than the limit allows.
      checkChars(s.length + width + width * countOf(s, '\n', (MAX_TEMPLATE_CHARS - s.length) / width + 1));
    }
  } else if (name === 'replace' && typeof operand.value === 'string') {
    checkStringCall('replace', operand.value, args);
  } else if (name === 'join' && Array.isArray(operand.value)) {
    const sep = arg(0, 'd');
    let n = typeof sep === 'string' ? sep.length * operand.value.length : 0;
    for (const item of operand.value as ValueLike[]) n += typeof item?.value === 'string' ? item.value.length : 24;
    checkChars(n);
  } else if (name === 'list' && typeof operand.value === 'string') {
    checkItems(operand.value.length);
  }
}

function checkStringCall(method: 'replace' | 'split', s: string, args: ValueLike[]): void {
  const pattern = args[0]?.value;
  if (typeof pattern !== 'string') return;
  if (method === 'split') {
    if (pattern !== '' && s.length / pattern.length >= MAX_TEMPLATE_ITEMS) checkItems(countOf(s, pattern, MAX_TEMPLATE_ITEMS) + 1);
    return;
  }
  const replacement = args[1]?.value;
  if (typeof replacement !== 'string' || replacement.length <= pattern.length) return;
  const limit = typeof args[2]?.value === 'number' && args[2].value >= 0 ? args[2].value : Infinity;
  const growth = replacement.length - pattern.length;
  // Counting stops once the occurrences are more than the limit allows.
  const enough = (MAX_TEMPLATE_CHARS - s.length) / growth + 1;
  checkChars(s.length + growth * Math.min(limit, pattern === '' ? s.length + 1 : countOf(s, pattern, enough)));
}

function checkValue(v: ValueLike): ValueLike {
  const value = v.value;
  if (typeof value === 'string') checkChars(value.length);
  else if (Array.isArray(value)) checkItems(value.length);
  return v;
}

function checkChars(n: number): void {
  if (n > MAX_TEMPLATE_CHARS) throw new TemplateLimitError('MAX_TEMPLATE_CHARS', `a string of ${n} characters`);
}

function checkItems(n: number): void {
  if (n > MAX_TEMPLATE_ITEMS) throw new TemplateLimitError('MAX_TEMPLATE_ITEMS', `a list of ${n} items`);
}

/** Occurrences of `pattern` (non-empty) in `s`, without overlaps, as split and replace count them; counting stops past `atMost`. */
function countOf(s: string, pattern: string, atMost: number): number {
  let n = 0;
  for (let i = s.indexOf(pattern); i >= 0 && n <= atMost; i = s.indexOf(pattern, i + pattern.length)) n++;
  return n;
}
