// qwen3_coder (Qwen3-Coder): `<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n…
// </function>\n</tool_call>`. The arguments are compact JSON that kiln builds, `{"P":value,…}`, each value
// typed by the tool's schema (typed-json-value.ts). String values stream as they are written;
// other types are held until the value ends. One framing newline is stripped at each end of a
// value, and a `</parameter>` inside a value (code!) ends it only when the next non-space text is
// structural: `<parameter=`, `</function>`, `</tool_call>`, or the end of the output.
import { escapeJsonString } from './escape-json-string.js';
import { FormatScanner, type ScannerOptions } from './format-scanner.js';
import { isJsonWhitespace } from './json-value-scanner.js';
import { matchMarker, NO_MATCH, PARTIAL } from './match-marker.js';
import { MAX_PARAMETERS } from './limits.js';
import { ToolCallCapError, type ScannerSink } from './scanner-sink.js';
import type { ParamType } from './tool-set.js';
import { typedJsonValue } from './typed-json-value.js';

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
  private streamValue = false;
  /** A newline read at the end of the value so far: framing if the value ends next. */
  private pendingNewline = false;
  private held: string[] = [];
  private heldLength = 0;
  /** `</parameter>` and the whitespace after it, while it is unknown whether the value ended. */
  private closeHold: string[] = [];
  private closeHoldLength = 0;
  private wroteParam = false;
  /** `"P": ` of a typed value, sent with the value. */
  private key = '';

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
    this.streamValue = this.type.kind === 'string';
    this.pendingNewline = false;
    this.held = [];
    this.heldLength = 0;
    this.qs = Q.ValueStart;
    if (!this.started) return;
    const key = `${this.wroteParam ? ',' : '{'}"${escapeJsonString(name)}":`;
    this.wroteParam = true;
    if (this.streamValue) this.sink.args(`${key}"`);
    else this.key = key;
  }

  /** Value text in order; a trailing newline waits until it is known not to be framing. */
  private valueText(s: string): void {
    if (s.length === 0) return;
    let out = this.pendingNewline ? `\n${s}` : s;
    this.pendingNewline = out.charCodeAt(out.length - 1) === 10;
    if (this.pendingNewline) out = out.slice(0, -1);
    if (out.length === 0 || !this.started) return;
    if (this.streamValue) this.sink.args(escapeJsonString(out));
    else {
      this.held.push(out);
      this.heldLength += out.length;
      this.checkHeld(this.heldLength);
    }
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
    if (this.streamValue) this.sink.args('"');
    else this.sink.args(this.key + typedJsonValue(this.held.join(''), this.type));
    this.held = [];
    this.heldLength = 0;
  }

  private confirm(): void {
    if (!this.started) return;
    if (!this.wroteParam) this.sink.args('{');
    this.confirmCall('}');
  }
}
