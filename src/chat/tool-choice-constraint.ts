// Enforces a required or named tool choice while the model generates: once the answer begins
// (outside any thinking block), its first tokens must spell the opening of a call to an allowed
// tool, up to where the arguments begin (callOpenings). Where the openings differ (which tool,
// which spelling, a blank line after thinking) the model chooses among them by its own logits,
// so a required call's name is always a declared tool's; where they agree the tokens are emitted
// without sampling. From there the call's body (its arguments under the tool's schema, then the
// format's closing) is constrained by a grammar matcher, so the call always parses. The openings
// are tokenized as template text, and the forced tokens run through the KV cache, detokenizer and
// tool-call streamer like sampled ones, so the streamer parses them and exact replay records them.
import type { DecodeConstraint } from '../generate/generate.js';
import type { GrammarMatcher } from '../grammar/matcher.js';
import { callOpenings } from '../tool-calls/call-openings.js';
import type { ToolCallFormat } from '../tool-calls/types.js';
import { setBits, ThinkWatcher } from './think-watcher.js';

const THINK_OPEN = '<think>';
/** What thinking models write between `</think>` and the answer. */
const AFTER_THINKING = ['', '\n', '\n\n'];

export interface ToolChoiceConstraintOptions {
  format: ToolCallFormat;
  /** The tools a call may name: every declared one ("required"), or the named one. */
  names: readonly string[];
  /** The model's chat template (it decides Mistral's call spelling). */
  chatTemplate: string;
  vocabSize: number;
  /** Tokenizes template text (control-token texts become their tokens). */
  encode(text: string): number[];
  /** The prompt left a `<think>` open: the answer begins after the model's `</think>`. */
  startsInReasoning: boolean;
  /** The model may open a thinking block before it answers (a thinking template that left none closed). */
  mayThink: boolean;
  /** A matcher for the call's body after `opening`, or null to leave the arguments free. */
  callBody?: (name: string, opening: string) => GrammarMatcher | null;
  /** Takes over once the call is complete (later calls to strict tools), else the model is free. */
  after?: DecodeConstraint;
}

interface TrieNode {
  readonly next: Map<number, TrieNode>;
  /** The ids of `next` as a mask, built when first asked. */
  mask: Uint32Array | null;
  /** A whole sequence ends here: a call's opening (with its tool and text), or the `<think>` that opens reasoning. */
  end: { kind: 'call'; name: string; opening: string } | { kind: 'think' } | null;
}

const enum Mode {
  /** Inside a thinking block: the model is free until `</think>`. */
  Reasoning,
  /** Spelling an opening. */
  Opening,
  /** In the call's body, under its matcher. */
  Body,
  /** The call is complete (or forcedTokens took over). */
  Done,
}

export class ToolChoiceConstraint implements DecodeConstraint {
  private mode: Mode;
  private node: TrieNode | null = null;
  private body: GrammarMatcher | null = null;
  private started = false;
  private readonly think = new ThinkWatcher();

  constructor(private readonly opts: ToolChoiceConstraintOptions) {
    if (opts.names.length === 0) throw new RangeError('a tool choice constraint needs at least one tool');
    this.mode = opts.startsInReasoning ? Mode.Reasoning : Mode.Opening;
    if (this.mode === Mode.Opening) this.node = this.trie(false);
  }

  allowed(): Uint32Array | null {
    switch (this.mode) {
      case Mode.Opening: {
        const node = this.node!;
        return (node.mask ??= setBits(new Uint32Array((this.opts.vocabSize + 31) >>> 5), [...node.next.keys()]));
      }
      case Mode.Body:
        return this.body!.allowed();
      case Mode.Done:
        return this.opts.after?.allowed() ?? null;
      default:
        return null;
    }
  }

  /** Whether kiln is writing a call now: spelling its opening (past its first token) or under its body's grammar. */
  get inCall(): boolean {
    if (this.mode === Mode.Body || (this.mode === Mode.Opening && this.started)) return true;
    return this.mode === Mode.Done && (this.opts.after as { inCall?: boolean } | undefined)?.inCall === true;
  }

  prepare(): void {
    if (this.mode === Mode.Body) this.body!.allowed();
    else if (this.mode === Mode.Done) this.opts.after?.prepare?.();
  }

  accept(id: number, text: string): void {
    switch (this.mode) {
      case Mode.Opening: {
        const next = this.node!.next.get(id);
        this.started = true;
        if (next === undefined) {
          // A token the constraint did not offer (forcedTokens): the caller has taken over.
          this.mode = Mode.Done;
        } else if (next.end?.kind === 'call') {
          this.body = this.opts.callBody?.(next.end.name, next.end.opening) ?? null;
          this.mode = this.body === null ? Mode.Done : Mode.Body;
        } else if (next.end?.kind === 'think') {
          this.mode = Mode.Reasoning;
          this.started = false;
        } else {
          this.node = next;
        }
        return;
      }
      case Mode.Body:
        if (!this.body!.accept(id) || this.body!.isComplete()) this.mode = Mode.Done;
        return;
      case Mode.Reasoning:
        if (this.think.push(text) !== null) {
          this.mode = Mode.Opening;
          this.node = this.trie(true);
        }
        return;
      case Mode.Done:
        this.opts.after?.accept(id, text);
    }
  }

  /** The openings as a token trie: after thinking with the blank lines models write there, else bare (and `<think>` where the model may think first). */
  private trie(afterThinking: boolean): TrieNode {
    const root = node();
    const { format, names, chatTemplate, encode } = this.opts;
    const prefixes = afterThinking ? AFTER_THINKING : [''];
    for (const name of names) {
      for (const opening of callOpenings(format, name, chatTemplate)) {
        for (const prefix of prefixes) add(root, encode(prefix + opening), { kind: 'call', name, opening });
      }
    }
    if (!afterThinking && this.opts.mayThink) add(root, encode(THINK_OPEN), { kind: 'think' });
    return root;
  }
}

function node(): TrieNode {
  return { next: new Map(), mask: null, end: null };
}

function add(root: TrieNode, tokens: readonly number[], end: NonNullable<TrieNode['end']>): void {
  if (tokens.length === 0) return;
  let at = root;
  for (const t of tokens) {
    // Where one sequence is a prefix of another, the shorter one wins (either order).
    if (at.end !== null) return;
    let next = at.next.get(t);
    if (next === undefined) {
      next = node();
      at.next.set(t, next);
    }
    at = next;
  }
  at.end = end;
  at.next.clear();
}
