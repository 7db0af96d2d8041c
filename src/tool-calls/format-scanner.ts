// The part every format's scanner shares: content and thinking, markers that may arrive split
// across pushes, surrogate pairs, the span of the call being read, call ids and caps. A subclass
// reads its own call syntax in spanStep(). Scanning is one left-to-right pass in which nothing
// decided is ever revised, so the same text gives the same result in any chunking; text that is
// still undecided (a partial marker, a call that has not proved itself) is all it holds.
import { isMistralCallId, uniqueId } from './call-id.js';
import { isJsonWhitespace } from './json-value-scanner.js';
import { exceedsBytes, MAX_CALLS, MAX_HELD_CHARS, MAX_ID_BYTES, MAX_NAME_BYTES } from './limits.js';
import { matchMarker, NO_MATCH, PARTIAL } from './match-marker.js';
import { ToolCallCapError, type ScannerSink } from './scanner-sink.js';
import { SpanText } from './span-text.js';
import type { ToolSet } from './tool-set.js';
import { TriggerFinder } from './trigger-finder.js';
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

export abstract class FormatScanner {
  protected readonly tools: ToolSet;
  protected readonly streaming: boolean;
  private readonly format: ToolCallFormat;
  private readonly mintId: (format: ToolCallFormat) => string;
  /** The think markers, then the subclass's span openers. */
  private readonly markers: readonly string[];
  private readonly triggers: TriggerFinder;

  private mode: Mode;
  /** Unconsumed text from the last push: a partial marker, a trailing high surrogate. */
  private carry = '';
  private stalled = false;
  /** A streaming scanner that diverged from the final parse reads nothing more. */
  private halted = false;
  private sawThinkOpen = false;
  private reportedStray = false;
  private readonly usedIds = new Set<string>();
  private callCount = 0;

  private readonly spanText = new SpanText();
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
    openers: readonly string[],
  ) {
    this.tools = opts.tools;
    this.streaming = opts.streaming;
    this.format = opts.format;
    this.mintId = opts.mintId;
    this.markers = [THINK_OPEN, THINK_CLOSE, ...openers];
    this.triggers = new TriggerFinder(this.markers);
    this.mode = opts.startsInReasoning ? Mode.Think : Mode.Content;
    this.sawThinkOpen = opts.startsInReasoning;
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
  /** One of the subclass's openers (its index) began a span. */
  protected abstract openSpan(opener: number): void;
  /** Called where content scanning (re)starts; llama3_json opens bare-JSON calls here. */
  protected atContentStart(_text: string, i: number, _n: number): number {
    return i;
  }

  private run(text: string, i: number, n: number, eof: boolean): number {
    this.triggers.reset();
    while (i < n && !this.halted) {
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
    while (i < n) {
      const j = this.triggers.next(text, i, n);
      if (j < 0) break;
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
      this.beginSpan(j);
      this.keepSpan(text, end);
      this.openSpan(m - 2);
      return end;
    }
    this.emitContent(text, from, n);
    return n;
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
        if (text.charCodeAt(j) === 60 && matchMarker(text, j, n, [THINK_CLOSE]) === PARTIAL) {
          hold = j;
          break;
        }
      }
    }
    if (hold > i) this.sink.reasoning(text.slice(i, hold));
    return hold < n ? this.stall(hold) : n;
  }

  /** Sends text[from..to) as content; `blank`: the caller knows it is all whitespace. */
  protected emitContent(text: string, from: number, to: number, blank = false): void {
    if (to <= from) return;
    if (this.candidate && !blank) {
      for (let k = from; k < to; k++) {
        if (!isJsonWhitespace(text.charCodeAt(k))) {
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

  /** Opens a span whose text begins at `at` of the current text. */
  protected beginSpan(at: number): void {
    this.mode = Mode.Span;
    this.spanText.clear();
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
      this.spanText.keep(text, from, to);
      this.checkHeld(this.spanText.length);
    }
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
    if (!this.spanIsContent && this.spanText.length > 0) this.sink.content(this.spanText.take());
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
    if (this.spanText.length > 0) this.sink.content(this.spanText.take());
    this.spanIsContent = true;
    this.started = false;
  }

  /** Ends this span and opens the next one at `at` (Mistral's list: the next element). */
  protected restartSpan(text: string, at: number): void {
    this.finishSpan(text, at);
    this.beginSpan(at);
  }

  private closeSpan(): void {
    this.spanText.clear();
    this.spanIsContent = false;
    this.started = false;
    this.mode = Mode.Content;
  }

  protected get inSpan(): boolean {
    return this.mode === Mode.Span;
  }

  /**
   * Streaming: the started call's arguments as sent can no longer match the final parse. The sink
   * is told, and scanning stops for good (the streamer takes the rest of the reply from the parse).
   */
  protected diverge(): void {
    this.sink.diverge();
    this.started = false;
    this.halted = true;
    this.mode = Mode.Content;
  }

  // ---- calls ----

  /** Starts the span's call; a valid model-written id (Mistral) is used if it is new. */
  protected startCall(name: string, modelId: string | null): void {
    if (this.streaming && ++this.callCount > MAX_CALLS) throw new ToolCallCapError('calls');
    let id: string;
    if (this.format !== 'mistral') {
      // Only Mistral models write ids; a minted id is 24 random characters, so no repeat check.
      id = this.mintId(this.format);
    } else {
      if (modelId !== null && isMistralCallId(modelId) && !this.usedIds.has(modelId)) id = modelId;
      else id = uniqueId(this.usedIds, () => this.mintId(this.format));
      this.usedIds.add(id);
    }
    this.started = true;
    this.sink.start(name, id);
    if (this.streaming) this.spanText.clear();
  }

  /** The started call is complete and valid; `tail` is the held end of its arguments. */
  protected confirmCall(tail: string): void {
    if (tail.length > 0) this.sink.args(tail);
    this.sink.end();
    this.started = false;
  }

  // ---- caps (streaming only) ----

  protected checkNameText(s: string): void {
    if (this.streaming && exceedsBytes(s, MAX_NAME_BYTES)) throw new ToolCallCapError('name');
  }

  protected checkIdText(s: string): void {
    if (this.streaming && exceedsBytes(s, MAX_ID_BYTES)) throw new ToolCallCapError('id');
  }

  protected checkHeld(length: number): void {
    if (this.streaming && length > MAX_HELD_CHARS) throw new ToolCallCapError('held text');
  }
}
