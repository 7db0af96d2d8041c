// Enforces a required or named tool choice while the model generates: once the answer begins
// (outside any thinking block), its first tokens must spell the opening of a call to an allowed
// tool, up to where the arguments begin (callOpenings). Where the openings differ (which tool,
// which spelling, a blank line after thinking) the model chooses among them by its own logits,
// so a required call's name is always a declared tool's; where they agree the tokens are emitted
// without sampling. The arguments are the model's. The openings are tokenized as template text,
// and the forced tokens run through the KV cache, detokenizer and tool-call streamer like
// sampled ones, so the streamer parses them and exact replay records them.
import type { DecodeConstraint } from '../generate/generate.js';
import { callOpenings } from '../tool-calls/call-openings.js';
import type { ToolCallFormat } from '../tool-calls/types.js';

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
/** What thinking models write between `</think>` and the answer. */
const AFTER_THINKING = ['', '\n', '\n\n'];

export interface ToolChoiceConstraintOptions {
  format: ToolCallFormat;
  /** The tools a call may name: every declared one ("required"), or the named one. */
  names: readonly string[];
  /** The model's chat template (it decides Mistral's call spelling). */
  chatTemplate: string;
  /** Tokenizes template text (control-token texts become their tokens). */
  encode(text: string): number[];
  /** The prompt left a `<think>` open: the answer begins after the model's `</think>`. */
  startsInReasoning: boolean;
  /** The model may open a thinking block before it answers (a thinking template that left none closed). */
  mayThink: boolean;
}

interface TrieNode {
  readonly next: Map<number, TrieNode>;
  /** The ids of `next`, as allowed() returns them. */
  choices: number[];
  /** A whole sequence ends here: a call's opening, or the `<think>` that opens reasoning. */
  end: 'call' | 'think' | null;
}

const enum Mode {
  /** Inside a thinking block: the model is free until `</think>`. */
  Reasoning,
  /** Spelling an opening. */
  Opening,
  /** The opening is written (or forcedTokens took over): the model is free. */
  Done,
}

export class ToolChoiceConstraint implements DecodeConstraint {
  private mode: Mode;
  private node: TrieNode | null = null;
  /** Inside reasoning: the end of the text so far, which may hold the start of `</think>`. */
  private tail = '';

  constructor(private readonly opts: ToolChoiceConstraintOptions) {
    if (opts.names.length === 0) throw new RangeError('a tool choice constraint needs at least one tool');
    this.mode = opts.startsInReasoning ? Mode.Reasoning : Mode.Opening;
    if (this.mode === Mode.Opening) this.node = this.trie(false);
  }

  allowed(): readonly number[] | null {
    return this.mode === Mode.Opening ? this.node!.choices : null;
  }

  accept(id: number, text: string): void {
    if (this.mode === Mode.Opening) {
      const next = this.node!.next.get(id);
      if (next === undefined) {
        // A token the constraint did not offer (forcedTokens): the caller has taken over.
        this.mode = Mode.Done;
      } else if (next.end === 'call') {
        this.mode = Mode.Done;
      } else if (next.end === 'think') {
        this.mode = Mode.Reasoning;
        this.tail = '';
      } else {
        this.node = next;
      }
      return;
    }
    if (this.mode === Mode.Reasoning && text !== '') {
      const tail = this.tail + text;
      if (tail.includes(THINK_CLOSE)) {
        this.mode = Mode.Opening;
        this.node = this.trie(true);
      } else {
        this.tail = tail.slice(-(THINK_CLOSE.length - 1));
      }
    }
  }

  /** The openings as a token trie: after thinking with the blank lines models write there, else bare (and `<think>` where the model may think first). */
  private trie(afterThinking: boolean): TrieNode {
    const root = node();
    const { format, names, chatTemplate, encode } = this.opts;
    const prefixes = afterThinking ? AFTER_THINKING : [''];
    for (const name of names) {
      for (const opening of callOpenings(format, name, chatTemplate)) {
        for (const prefix of prefixes) add(root, encode(prefix + opening), 'call');
      }
    }
    if (!afterThinking && this.opts.mayThink) add(root, encode(THINK_OPEN), 'think');
    return root;
  }
}

function node(): TrieNode {
  return { next: new Map(), choices: [], end: null };
}

function add(root: TrieNode, tokens: readonly number[], end: 'call' | 'think'): void {
  if (tokens.length === 0) return;
  let at = root;
  for (const t of tokens) {
    // Where one sequence is a prefix of another, the shorter one wins (either order).
    if (at.end !== null) return;
    let next = at.next.get(t);
    if (next === undefined) {
      next = node();
      at.next.set(t, next);
      at.choices.push(t);
    }
    at = next;
  }
  at.end = end;
  at.next.clear();
  at.choices = [];
}
