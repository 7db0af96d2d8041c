// qwen3_coder (Qwen3-Coder): `<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…
// </function>\n</tool_call>`. The arguments are compact JSON that kiln builds, `{"P":value,…}`, each value
// typed by the tool's schema (typed-json-value.ts). String values stream as they are written, and
// so do `object` and `array` values while they are JSON (json-value-stream.ts); other types are
// held until the value ends. One framing newline is stripped at each end of a value, and a
// `</parameter>` inside a value (code!) ends it only when the next non-space text is structural:
// `<parameter=`, `</function>`, `</tool_call>`, or the end of the output.
import { escapeJsonString } from './escape-json-string.js';
import { FormatScanner, type ScannerOptions } from './format-scanner.js';
import { isJsonWhitespace } from './json-value-scanner.js';
import { JsonValueStream } from './json-value-stream.js';
import { matchMarker, NO_MATCH, PARTIAL } from './match-marker.js';
import { MAX_PARAMETERS } from './limits.js';
import { ToolCallCapError, type ScannerSink } from './scanner-sink.js';
import type { ParamType } from './tool-set.js';
import { typedJsonValue } from './typed-json-value.js';

/** How the current value goes out. */
const enum V {
  String, // as it is written, escaped
  Json, // as it is written while it is JSON (streaming only)
  Held, // typed when it ends
}

const enum Q {
  Open, // after <tool_call>: expect <function=
  FunctionName,
  Body, // between parameters
  ParamName,
  ValueStart,
  Value,
  Close, // after a </parameter> inside or at the end of a value
  AfterFunction,
}

const FUNCTION = ['<function='];
const PARAMETER = '<parameter=';
const END_FUNCTION = '</function>';
const END_CALL = '</tool_call>';
const BODY = [PARAMETER, END_FUNCTION, END_CALL];
const END_VALUE = ['</parameter>'];
const AFTER_FUNCTION = [END_CALL];

export class Qwen3CoderScanner extends FormatScanner {
  private qs = Q.Open;
  private header = '';
  private fn = '';
  private params = 0;
  private type: ParamType = { kind: 'string', nullable: false };
  private valueMode = V.String;
  private readonly json = new JsonValueStream();
  /** A newline read at the end of the value so far: framing if the value ends next. */
  private pendingNewline = false;
  private held: string[] = [];
  private heldLength = 0;
  /** `</parameter>` and the whitespace after it, while it is unknown whether the value ended. */
  private closeHold: string[] = [];
  private closeHoldLength = 0;
  private wroteParam = false;

  constructor(sink: ScannerSink, opts: ScannerOptions) {
    super(sink, opts, ['<tool_call>']);
  }

  protected openSpan(): void {
    this.qs = Q.Open;
    this.params = 0;
    this.wroteParam = false;
  }

  protected spanStep(text: string, i: number, n: number, eof: boolean): number {
    while (i < n && this.inSpan) {
      const c = text.charCodeAt(i);
      switch (this.qs) {
        case Q.Open: {
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          const m = c === 60 ? matchMarker(text, i, n, FUNCTION) : -1;
          if (m === PARTIAL && !eof) return this.stall(i);
          if (m !== 0) return this.fail(text, i);
          i += FUNCTION[0]!.length;
          this.header = '';
          this.qs = Q.FunctionName;
          continue;
        }
        case Q.FunctionName:
        case Q.ParamName: {
          let j = i;
          while (j < n) {
            const d = text.charCodeAt(j);
            if (d === 62 || d === 60 || d === 10) break;
            j++;
          }
          this.header += text.slice(i, j);
          this.checkNameText(this.header);
          if (j === n) return n;
          if (text.charCodeAt(j) !== 62) return this.fail(text, j);
          i = j + 1;
          if (this.qs === Q.FunctionName) this.beginFunction(text, i);
          else this.beginValue();
          continue;
        }
        case Q.Body:
        case Q.Close:
        case Q.AfterFunction: {
          if (isJsonWhitespace(c)) {
            let j = i + 1;
            while (j < n && isJsonWhitespace(text.charCodeAt(j))) j++;
            if (this.qs === Q.Close) {
              this.closeHold.push(text.slice(i, j));
              this.closeHoldLength += j - i;
              this.checkHeld(this.closeHoldLength);
            }
            i = j;
            continue;
          }
          const markers = this.qs === Q.AfterFunction ? AFTER_FUNCTION : BODY;
          const m = c === 60 ? matchMarker(text, i, n, markers) : -1;
          if (m === PARTIAL && !eof) return this.stall(i);
          if (m < 0) {
            if (this.qs !== Q.Close) return this.fail(text, i);
            // Not structural: the `</parameter>` was part of the value.
            this.reopenValue();
            continue;
          }
          if (this.qs === Q.Close) this.endValue();
          const marker = markers[m]!;
          i += marker.length;
          if (marker === PARAMETER) {
            this.header = '';
            this.qs = Q.ParamName;
          } else if (marker === END_FUNCTION) {
            this.qs = Q.AfterFunction;
          } else {
            this.confirm();
            this.finishSpan(text, i);
            return i;
          }
          continue;
        }
        case Q.ValueStart:
          // The opening framing newline.
          if (c === 10) i++;
          this.qs = Q.Value;
          continue;
        case Q.Value: {
          // Value text runs to the next `</parameter>`; other `<` are part of it.
          let k = i;
          for (;;) {
            const j = text.indexOf('<', k);
            if (j < 0 || j >= n) {
              this.valueText(text.slice(i, n));
              return n;
            }
            const m = matchMarker(text, j, n, END_VALUE);
            if (m === NO_MATCH || (m === PARTIAL && eof)) {
              k = j + 1;
              continue;
            }
            this.valueText(text.slice(i, j));
            if (m === PARTIAL) return this.stall(j);
            this.closeHold = [END_VALUE[0]!];
            this.closeHoldLength = END_VALUE[0]!.length;
            this.qs = Q.Close;
            i = j + END_VALUE[0]!.length;
            break;
          }
          continue;
        }
      }
    }
    return i;
  }

  protected spanEof(): void {
    // The end of the output ends a value after `</parameter>`; a call complete up to its closing
    // markers is kept (generation stopped there). Anything shorter is not a call.
    const ended = this.qs === Q.Close || this.qs === Q.AfterFunction;
    if (this.qs === Q.Close) this.endValue();
    if (ended) {
      this.confirm();
      this.finishSpan('', 0);
    } else {
      this.failSpan('', 0);
    }
  }

  private fail(text: string, at: number): number {
    this.failSpan(text, at);
    return at;
  }

  private beginFunction(text: string, at: number): void {
    this.fn = this.header;
    this.qs = Q.Body;
    if (this.tools.has(this.fn)) this.startCall(this.fn, null);
    else this.notACall(text, at);
  }

  private beginValue(): void {
    if (++this.params > MAX_PARAMETERS && this.streaming) throw new ToolCallCapError('parameters');
    const name = this.header;
    this.type = this.tools.paramType(this.fn, name);
    const kind = this.type.kind;
    if (kind === 'string') this.valueMode = V.String;
    else if (this.streaming && (kind === 'object' || kind === 'array')) this.valueMode = V.Json;
    else this.valueMode = V.Held;
    if (this.valueMode === V.Json) this.json.reset(kind === 'object' ? 123 : 91);
    this.pendingNewline = false;
    this.clearHeld();
    this.qs = Q.ValueStart;
    if (!this.started) return;
    // Every typing of the value follows its key, so the key can go out at once.
    const key = `${this.wroteParam ? ',' : '{'}"${escapeJsonString(name)}":`;
    this.wroteParam = true;
    this.sink.args(this.valueMode === V.String ? `${key}"` : key);
  }

  /** Value text in order. */
  private valueText(s: string): void {
    if (s.length === 0 || !this.started) return;
    if (this.valueMode === V.Json) {
      // Until the value is committed to JSON, its text is also kept for the final typing.
      if (!this.json.committed) this.hold(this.unframed(s));
      const out = this.json.push(s);
      if (out === null) this.notJson();
      else if (out.length > 0) {
        this.clearHeld();
        this.sink.args(out);
      }
      return;
    }
    const out = this.unframed(s);
    if (out.length === 0) return;
    if (this.valueMode === V.String) this.sink.args(escapeJsonString(out));
    else this.hold(out);
  }

  /** The value text of `s` known so far: a trailing newline waits until it is known not to be framing. */
  private unframed(s: string): string {
    const out = this.pendingNewline ? `\n${s}` : s;
    this.pendingNewline = out.charCodeAt(out.length - 1) === 10;
    return this.pendingNewline ? out.slice(0, -1) : out;
  }

  private hold(s: string): void {
    if (s.length === 0) return;
    this.held.push(s);
    this.heldLength += s.length;
    this.checkHeld(this.heldLength);
  }

  private clearHeld(): void {
    if (this.heldLength === 0) return;
    this.held = [];
    this.heldLength = 0;
  }

  /**
   * The value is not JSON of its kind. Before anything of it went out, it is typed when it ends,
   * like any held value (its text is kept); after, what was sent can no longer match the final parse.
   */
  private notJson(): void {
    if (this.json.committed) this.diverge();
    else this.valueMode = V.Held;
  }

  private reopenValue(): void {
    const hold = this.closeHold.join('');
    this.closeHold = [];
    this.qs = Q.Value;
    this.valueText(hold);
  }

  private endValue(): void {
    this.closeHold = [];
    this.qs = Q.Body;
    if (!this.started) return;
    if (this.valueMode === V.String) {
      this.sink.args('"');
      return;
    }
    if (this.valueMode === V.Json) {
      const rest = this.json.end();
      if (rest !== null) {
        this.sink.args(rest);
        this.clearHeld();
        return;
      }
      if (this.json.committed) {
        // It ended before it was a whole JSON value: the final parse makes it a string.
        this.diverge();
        return;
      }
    }
    this.sink.args(typedJsonValue(this.held.join(''), this.type));
    this.clearHeld();
  }

  private confirm(): void {
    if (!this.started) return;
    if (!this.wroteParam) this.sink.args('{');
    this.confirmCall('}');
  }
}
