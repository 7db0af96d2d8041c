// The part every format's scanner shares: content and thinking, markers that may arrive split
// across pushes, surrogate pairs, the span of the call being read, call ids and caps. A subclass
// reads its own call syntax in spanStep(). Scanning is one left-to-right pass in which nothing
// decided is ever revised, so the same text gives the same result in any chunking; text that is
// still undecided (a partial marker, a call that has not proved itself) is all it holds.
import { isMistralCallId } from './call-id.js';
import { MAX_CALLS, MAX_HELD_CHARS, MAX_ID_BYTES, MAX_NAME_BYTES } from './limits.js';
import { ToolCallCapError, type ScannerSink } from './scanner-sink.js';
import type { ToolSet } from './tool-set.js';
import type { ToolCallFormat } from './types.js';

export interface ScannerOptions {
  format: ToolCallFormat;
  tools: ToolSet;
  startsInReasoning: boolean;
  /**
   * Streaming mode: enforce the caps in limits.ts, and keep no copy of a started call's text
   * (the streamer takes the whole span from the final parse if the call turns out invalid).
   */
  streaming: boolean;
  mintId: (format: ToolCallFormat) => string;
}

const enum Mode {
  Content,
  Think,
  Span,
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

/** Result of looking for a marker at a position. */
export const NO_MATCH = -1;
export const PARTIAL = -2;

/** Which of `markers` starts at text[j]: its index, PARTIAL if text ends inside one, or NO_MATCH. */
export function matchMarker(text: string, j: number, n: number, markers: readonly string[]): number {
  let partial = false;
  for (let k = 0; k < markers.length; k++) {
    const m = markers[k]!;
    const len = Math.min(m.length, n - j);
    let p = 0;
    while (p < len && text.charCodeAt(j + p) === m.charCodeAt(p)) p++;
    if (p === m.length) return k;
    if (p === len) partial = true;
  }
  return partial ? PARTIAL : NO_MATCH;
}

export function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return n;
}

export abstract class FormatScanner {
  protected readonly tools: ToolSet;
  protected readonly streaming: boolean;
  private readonly format: ToolCallFormat;
  private readonly mintId: (format: ToolCallFormat) => string;
  /** Openers of a call span recognised in content, in priority order after the think markers. */
  private readonly markers: readonly string[];
  private readonly triggers: string;
  /** For each ASCII code: 1 if a marker starts with it. Every marker starts with ASCII. */
  private readonly isTrigger = new Uint8Array(128);
  /** For each ASCII code: 1 if it is the second character of a marker. */
  private readonly isSecond = new Uint8Array(128);

  private mode: Mode;
  private carry = '';
  private stalled = false;
  private sawThinkOpen = false;
  private reportedStray = false;
  private readonly usedIds = new Set<string>();
  private callCount = 0;
  // Where each trigger character next occurs in the current text (-1: nowhere, -2: unknown), so a
  // text full of one trigger never rescans for another.
  private textGen = 0;
  private trigGen = -1;
  private readonly trigPos: number[];

  // The span being read: its text so far (until it is known to be a call or content), as pieces
  // plus a range of the current text not sliced yet (a whole-text parse slices each span once).
  private readonly parts: string[] = [];
  private partsLength = 0;
  private rangeText: string | null = null;
  private rangeFrom = 0;
  private rangeTo = 0;
  /** Start of the text of the current span step not yet kept. */
  protected stepStart = 0;
  /** The span is known not to be a call: its text goes straight to content. */
  protected spanIsContent = false;
  /** The span's call has been started (sink.start sent). */
  protected started = false;
  /** llama3_json: a bare `{` here may open a call (start of output, or after a call). */
  protected candidate = false;

  constructor(
    protected readonly sink: ScannerSink,
    opts: ScannerOptions,
    markers: readonly string[],
  ) {
    this.tools = opts.tools;
    this.streaming = opts.streaming;
    this.format = opts.format;
    this.mintId = opts.mintId;
    this.markers = [THINK_OPEN, THINK_CLOSE, ...markers];
    this.triggers = [...new Set(this.markers.map((m) => m[0]!))].join('');
    this.trigPos = new Array<number>(this.triggers.length).fill(-2);
    for (const m of this.markers) {
      this.isTrigger[m.charCodeAt(0)] = 1;
      this.isSecond[m.charCodeAt(1)] = 1;
    }
    this.mode = opts.startsInReasoning ? Mode.Think : Mode.Content;
    if (opts.startsInReasoning) this.sawThinkOpen = true;
  }

  feed(chunk: string): void {
    const text = this.carry.length > 0 ? this.carry + chunk : chunk;
    this.carry = '';
    let n = text.length;
    // Never let a surrogate pair straddle two pieces of output: hold a trailing high surrogate.
    if (n > 0) {
      const c = text.charCodeAt(n - 1);
      if (c >= 0xd800 && c <= 0xdbff) n--;
    }
    const i = this.run(text, 0, n, false);
    if (i < text.length) this.carry = text.slice(i);
  }

  end(): void {
    const text = this.carry;
    this.carry = '';
    this.run(text, 0, text.length, true);
    if (this.mode === Mode.Span) {
      // Everything has been read; subclasses end the span with finishSpan('', 0) / failSpan('', 0).
      this.stepStart = 0;
      this.spanEof();
    }
  }

  /** Reads call syntax from text[i..n); returns where it stopped (see stall/finishSpan/failSpan). */
  protected abstract spanStep(text: string, i: number, n: number, eof: boolean): number;
  /** End of output inside a span: confirm the call if its syntax is complete, else failSpan. */
  protected abstract spanEof(): void;
  /** A marker (index into the subclass's list) opened a span at text[j..i). */
  protected abstract openSpan(marker: number): void;
  /** Called where content scanning (re)starts; llama3_json opens bare-JSON calls here. */
  protected atContentStart(text: string, i: number, _n: number): number {
    return i;
  }

  private run(text: string, i: number, n: number, eof: boolean): number {
    this.textGen++;
    while (i < n) {
      const before = i;
      const mode = this.mode;
      if (mode === Mode.Content) i = this.scanContent(text, i, n, eof);
      else if (mode === Mode.Think) i = this.scanThink(text, i, n, eof);
      else {
        this.stepStart = i;
        i = this.spanStep(text, i, n, eof);
        if (this.mode === Mode.Span) this.keepSpan(text, i);
      }
      if (this.stalled) {
        this.stalled = false;
        return i;
      }
      if (i === before && this.mode === mode) throw new Error(`tool-call scanner made no progress at ${i}`);
    }
    return i;
  }

  private scanContent(text: string, i: number, n: number, eof: boolean): number {
    i = this.atContentStart(text, i, n);
    if (this.mode !== Mode.Content) return i;
    let from = i;
    const triggers = this.triggers;
    while (i < n) {
      const j = this.nextTrigger(text, i, n, triggers);
      if (j < 0) break;
      // Most triggers in text are not markers: rule those out on the next character.
      if (j + 1 < n) {
        const c2 = text.charCodeAt(j + 1);
        if (c2 >= 128 || this.isSecond[c2] === 0) {
          i = j + 1;
          continue;
        }
      }
      const m = matchMarker(text, j, n, this.markers);
      if (m === NO_MATCH || (m === PARTIAL && eof)) {
        i = j + 1;
        continue;
      }
      this.emitContent(text, from, j);
      if (m === PARTIAL) return this.stall(j);
      const end = j + this.markers[m]!.length;
      if (m === 0) {
        this.sawThinkOpen = true;
        this.mode = Mode.Think;
        return end;
      }
      if (m === 1) {
        // A closer with no opener: the output began inside reasoning (the opener was in the
        // prompt). Without being told so, the scanner has already sent that text as content.
        if (!this.sawThinkOpen && !this.reportedStray) {
          this.reportedStray = true;
          this.sink.strayThinkClose();
        }
        from = j;
        i = end;
        continue;
      }
      this.beginSpan(text, j);
      this.keepSpan(text, end);
      this.openSpan(m - 2);
      return end;
    }
    this.emitContent(text, from, n);
    return n;
  }

  /** The next character that could open a marker; each trigger's position is remembered per text. */
  private nextTrigger(text: string, i: number, n: number, triggers: string): number {
    if (triggers.length === 1) {
      const j = text.indexOf(triggers, i);
      return j < n ? j : -1;
    }
    // A token's worth of text, or a trigger close by: one pass beats an indexOf per trigger.
    const table = this.isTrigger;
    const near = Math.min(n, i + 32);
    for (let j = i; j < near; j++) {
      const c = text.charCodeAt(j);
      if (c < 128 && table[c] === 1) return j;
    }
    if (near === n) return -1;
    i = near;
    if (this.trigGen !== this.textGen) {
      this.trigGen = this.textGen;
      this.trigPos.fill(-2);
    }
    let best = -1;
    for (let k = 0; k < triggers.length; k++) {
      let j = this.trigPos[k]!;
      if (j !== -1 && j < i) this.trigPos[k] = j = text.indexOf(triggers[k]!, i);
      if (j >= 0 && j < n && (best < 0 || j < best)) best = j;
    }
    return best;
  }

  private scanThink(text: string, i: number, n: number, eof: boolean): number {
    const k = text.indexOf(THINK_CLOSE, i);
    if (k >= 0 && k + THINK_CLOSE.length <= n) {
      if (k > i) this.sink.reasoning(text.slice(i, k));
      this.mode = Mode.Content;
      return k + THINK_CLOSE.length;
    }
    // Hold back a tail that could still become `</think>`.
    let hold = n;
    if (!eof) {
      for (let j = Math.max(i, n - THINK_CLOSE.length + 1); j < n; j++) {
        if (text.charCodeAt(j) === 60 && THINK_CLOSE.startsWith(text.slice(j, n))) {
          hold = j;
          break;
        }
      }
    }
    if (hold > i) this.sink.reasoning(text.slice(i, hold));
    return hold < n ? this.stall(hold) : n;
  }

  protected emitContent(text: string, from: number, to: number): void {
    if (to <= from) return;
    if (this.candidate) {
      for (let k = from; k < to; k++) {
        if (!isWs(text.charCodeAt(k))) {
          this.candidate = false;
          break;
        }
      }
    }
    this.sink.content(from === 0 && to === text.length ? text : text.slice(from, to));
  }

  /** Stops this pass at `at`: the text from there on is kept for the next push. */
  protected stall(at: number): number {
    this.stalled = true;
    return at;
  }

  // ---- spans ----

  /** Opens a span at text[at]; `at` is where its text begins. */
  protected beginSpan(_text: string, at: number): void {
    this.mode = Mode.Span;
    this.clearSpanText();
    this.spanIsContent = false;
    this.started = false;
    this.stepStart = at;
  }

  /** Takes text[stepStart..to) into the span. */
  protected keepSpan(text: string, to: number): void {
    const from = this.stepStart;
    if (to <= from) return;
    this.stepStart = to;
    if (this.spanIsContent) {
      this.sink.content(text.slice(from, to));
    } else if (!this.started || !this.streaming) {
      if (this.rangeText === text && this.rangeTo === from) {
        this.rangeTo = to;
      } else {
        this.flushRange();
        this.rangeText = text;
        this.rangeFrom = from;
        this.rangeTo = to;
      }
      this.partsLength += to - from;
      if (this.streaming && this.partsLength > MAX_HELD_CHARS) throw new ToolCallCapError('held text');
    }
  }

  private flushRange(): void {
    if (this.rangeText === null) return;
    this.parts.push(this.rangeText.slice(this.rangeFrom, this.rangeTo));
    this.rangeText = null;
  }

  private clearSpanText(): void {
    this.parts.length = 0;
    this.partsLength = 0;
    this.rangeText = null;
  }

  /** The span ended well at `at` (a confirmed call, a not-a-call sent as content, or syntax). */
  protected finishSpan(text: string, at: number): void {
    this.keepSpan(text, at);
    this.closeSpan();
  }

  /** The span is not a call: its text up to `at` is content, and scanning resumes at `at`. */
  protected failSpan(text: string, at: number): void {
    this.keepSpan(text, at);
    if (this.started) this.sink.abandon();
    if (!this.spanIsContent && this.partsLength > 0) this.emitSpanContent();
    this.closeSpan();
  }

  /**
   * The span is well-formed but not a call (an undeclared tool, an unknown key): its text so far
   * is content and the rest of it follows as content as it is read.
   */
  protected notACall(text: string, at: number): void {
    if (this.spanIsContent) return;
    this.keepSpan(text, at);
    if (this.started) this.sink.abandon();
    if (this.partsLength > 0) this.emitSpanContent();
    this.clearSpanText();
    this.spanIsContent = true;
    this.started = false;
  }

  /** Ends this span and opens the next one at `at` (Mistral's list: the next element). */
  protected restartSpan(text: string, at: number): void {
    this.finishSpan(text, at);
    this.beginSpan(text, at);
  }

  private emitSpanContent(): void {
    this.flushRange();
    this.sink.content(this.parts.length === 1 ? this.parts[0]! : this.parts.join(''));
  }

  private closeSpan(): void {
    this.clearSpanText();
    this.spanIsContent = false;
    this.started = false;
    this.mode = Mode.Content;
  }

  protected get inSpan(): boolean {
    return this.mode === Mode.Span;
  }

  // ---- calls ----

  /** Starts the span's call; a valid model-written id (Mistral) is used if it is new. */
  protected startCall(name: string, modelId: string | null): void {
    if (this.streaming && ++this.callCount > MAX_CALLS) throw new ToolCallCapError('calls');
    let id: string;
    if (modelId !== null && isMistralCallId(modelId) && !this.usedIds.has(modelId)) id = modelId;
    else {
      do id = this.mintId(this.format);
      while (this.usedIds.has(id));
    }
    this.usedIds.add(id);
    this.started = true;
    this.sink.start(name, id);
    if (this.streaming) this.clearSpanText();
  }

  /** The started call is complete and valid; `tail` is the held end of its arguments. */
  protected confirmCall(tail: string): void {
    if (tail.length > 0) this.sink.args(tail);
    this.sink.end();
    this.started = false;
  }

  protected checkNameText(s: string): void {
    if (this.streaming && s.length > MAX_NAME_BYTES / 3 && utf8Length(s) > MAX_NAME_BYTES) throw new ToolCallCapError('name');
  }

  protected checkIdText(s: string): void {
    if (this.streaming && s.length > MAX_ID_BYTES / 3 && utf8Length(s) > MAX_ID_BYTES) throw new ToolCallCapError('id');
  }

  protected checkHeld(length: number): void {
    if (this.streaming && length > MAX_HELD_CHARS) throw new ToolCallCapError('held text');
  }
}
