// Constrains a chat reply's answer to a grammar (a response format's JSON schema, or a grammar the
// caller gave): thinking stays free up to `</think>`, the blank lines thinking models write after
// it are allowed, a thinking model may open `<think>` first, and from the answer's first
// character on every token must keep the text inside the grammar; the end of the turn is allowed
// once the grammar is complete.
import type { DecodeConstraint } from '../generate/generate.js';
import type { GrammarMatcher } from '../grammar/matcher.js';
import { setBits, ThinkWatcher } from './think-watcher.js';

export interface AnswerGrammarConstraintOptions {
  matcher: GrammarMatcher;
  /** The prompt left a `<think>` open: the answer begins after the model's `</think>`. */
  startsInReasoning: boolean;
  /** The model may open a thinking block before it answers. */
  mayThink: boolean;
  /** Tokenizes template text (control-token texts become their tokens). */
  encode(text: string): number[];
}

const enum Mode { Reasoning, Start, Answer, Off }
/** Blank lines allowed between `</think>` and the answer. */
const MAX_BLANK = 2;

export class AnswerGrammarConstraint implements DecodeConstraint {
  private mode: Mode;
  private readonly think = new ThinkWatcher();
  private readonly thinkOpen: number | null;
  /** Tokens of blank lines ('\n', '\n\n'), with their newline counts. */
  private readonly newlines = new Map<number, number>();
  private afterThinking = false;
  private blank = 0;
  private readonly extra: Uint32Array;

  constructor(private readonly opts: AnswerGrammarConstraintOptions) {
    this.mode = opts.startsInReasoning ? Mode.Reasoning : Mode.Start;
    const single = (text: string) => {
      const ids = opts.encode(text);
      return ids.length === 1 ? ids[0]! : null;
    };
    this.thinkOpen = opts.mayThink ? single('<think>') : null;
    for (const n of [1, MAX_BLANK]) {
      const id = single('\n'.repeat(n));
      if (id !== null) this.newlines.set(id, n);
    }
    this.extra = new Uint32Array((opts.matcher.vocabSize + 31) >>> 5);
  }

  allowed(): Uint32Array | null {
    if (this.mode === Mode.Reasoning || this.mode === Mode.Off) return null;
    const mask = this.opts.matcher.allowed();
    if (this.mode === Mode.Answer) return mask;
    // Before the answer: its first tokens, or the ways into it.
    const out = this.extra;
    out.set(mask);
    if (this.thinkOpen !== null && !this.afterThinking) setBits(out, [this.thinkOpen]);
    if (this.afterThinking) for (const [id, n] of this.newlines) if (this.blank + n <= MAX_BLANK) setBits(out, [id]);
    return out;
  }

  prepare(): void {
    if (this.mode === Mode.Start || this.mode === Mode.Answer) this.opts.matcher.allowed();
  }

  accept(id: number, text: string): void {
    switch (this.mode) {
      case Mode.Reasoning:
        if (this.think.push(text) !== null) {
          this.mode = Mode.Start;
          this.afterThinking = true;
        }
        return;
      case Mode.Start:
        if (id === this.thinkOpen && !this.afterThinking) {
          this.mode = Mode.Reasoning;
        } else if (this.opts.matcher.accept(id)) {
          this.mode = Mode.Answer;
        } else if (this.afterThinking && this.blank + (this.newlines.get(id) ?? MAX_BLANK + 1) <= MAX_BLANK) {
          this.blank += this.newlines.get(id)!;
        } else {
          this.mode = Mode.Off;
        }
        return;
      case Mode.Answer:
        // A token the grammar refuses can only be one the caller forced: stand down.
        if (!this.opts.matcher.accept(id)) this.mode = Mode.Off;
        return;
      case Mode.Off:
    }
  }
}
