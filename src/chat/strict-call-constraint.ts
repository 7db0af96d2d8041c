// Strict function tools with a free tool choice: the model decides whether to call and writes the
// call's opening itself; as soon as the text holds the opening of a call to a strict tool, up to
// where its arguments begin, the rest of the call (arguments under the tool's schema, then the
// format's closing) is constrained by a grammar matcher. Text that arrived in the same token after
// the opening is fed to the matcher first. Thinking is skipped: a call is only recognised in the
// answer.
import type { DecodeConstraint } from '../generate/generate.js';
import type { GrammarMatcher } from '../grammar/matcher.js';
import type { ToolCallFormat } from '../tool-calls/types.js';
import { ThinkWatcher } from './think-watcher.js';

export interface StrictCallConstraintOptions {
  format: ToolCallFormat;
  /** The strict tools, by name. */
  strict: ReadonlySet<string>;
  /** A matcher for the call's body after `opening` (the text matched up to its arguments). */
  callBody(name: string, opening: string): GrammarMatcher;
  startsInReasoning: boolean;
  /** The model may open a thinking block before it answers. */
  mayThink: boolean;
  /** Told when a call's arguments had begun in a way its grammar refuses (then left free). */
  onUnconstrained?(name: string): void;
}

const JSON_STRING = '("(?:[^"\\\\]|\\\\.)*")';
/** Where a call's arguments begin, per format: the text up to there, with the tool's name in group 1. */
const OPENINGS: Record<ToolCallFormat, RegExp[]> = {
  hermes: [new RegExp(`<tool_call>\\s*\\{\\s*"name"\\s*:\\s*${JSON_STRING}\\s*,\\s*"arguments"\\s*:`)],
  llama3_json: [new RegExp(`^\\s*(?:<\\|python_tag\\|>)?\\s*\\{\\s*"name"\\s*:\\s*${JSON_STRING}\\s*,\\s*"parameters"\\s*:`)],
  mistral: [
    /\[TOOL_CALLS\]\s*([A-Za-z0-9_.:-]+)(?:\[ARGS\]|\[CALL_ID\])/,
    new RegExp(`\\[TOOL_CALLS\\]\\s*\\[\\s*\\{\\s*"name"\\s*:\\s*${JSON_STRING}\\s*,\\s*"arguments"\\s*:`),
  ],
  qwen3_coder: [/<tool_call>\s*<function=([^>\n]+)>\n/],
};
/** Text kept while looking for an opening: enough for a marker, a 128-character name and the keys. */
const MAX_WATCHED = 1024;

const enum Mode { Reasoning, Watching, Body }

export class StrictCallConstraint implements DecodeConstraint {
  private mode: Mode;
  private text = '';
  private body: GrammarMatcher | null = null;
  private readonly think = new ThinkWatcher();
  private readonly utf8 = new TextEncoder();

  constructor(private readonly opts: StrictCallConstraintOptions) {
    this.mode = opts.startsInReasoning ? Mode.Reasoning : Mode.Watching;
  }

  allowed(): Uint32Array | null {
    return this.mode === Mode.Body ? this.body!.allowed() : null;
  }

  /** Whether a call's body is being written under its grammar. */
  get inCall(): boolean {
    return this.mode === Mode.Body;
  }

  prepare(): void {
    if (this.mode === Mode.Body) this.body!.allowed();
  }

  accept(id: number, text: string): void {
    switch (this.mode) {
      case Mode.Reasoning: {
        const rest = this.think.push(text);
        if (rest !== null) {
          this.mode = Mode.Watching;
          this.watch(rest);
        }
        return;
      }
      case Mode.Body:
        if (!this.body!.accept(id) || this.body!.isComplete()) this.end();
        return;
      case Mode.Watching:
        if (this.opts.mayThink && this.text.trim() === '' && (this.text + text).trimStart().startsWith('<think>')) {
          const after = (this.text + text).trimStart().slice('<think>'.length);
          this.mode = Mode.Reasoning;
          this.text = '';
          const rest = this.think.push(after);
          if (rest !== null) {
            this.mode = Mode.Watching;
            this.watch(rest);
          }
          return;
        }
        this.watch(text);
    }
  }

  private watch(text: string): void {
    this.text = (this.text + text).slice(-MAX_WATCHED);
    for (const re of OPENINGS[this.opts.format]) {
      const m = re.exec(this.text);
      if (m === null) continue;
      let name: string;
      try {
        name = m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : m[1]!;
      } catch {
        continue;
      }
      const after = this.text.slice(m.index + m[0].length);
      if (!this.opts.strict.has(name)) {
        this.text = after;
        continue;
      }
      const body = this.opts.callBody(name, m[0]);
      this.text = '';
      if (!body.acceptBytes(this.utf8.encode(after))) {
        this.opts.onUnconstrained?.(name);
        return;
      }
      if (body.isComplete()) return;
      this.body = body;
      this.mode = Mode.Body;
      return;
    }
  }

  private end(): void {
    this.body = null;
    this.mode = Mode.Watching;
    this.text = '';
  }
}
