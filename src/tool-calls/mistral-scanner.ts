// mistral: the list form `[TOOL_CALLS][{"name": …, "arguments": {…}, "id": …}, …]` and the newer
// `[TOOL_CALLS]name[ARGS]{…}` / `[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}`, repeated for parallel calls.
// In the newer form the name ends at `[CALL_ID]` or `[ARGS]` and the call starts once its id is
// known, at `[ARGS]`; each call is confirmed at its arguments' closing `}`. In the list form each
// element is its own call, confirmed at its `}`; an element that is not a call is content.
import type { ScannerOptions } from './format-scanner.js';
import { JsonCallScanner } from './json-call-scanner.js';
import { isJsonWhitespace, JsonValueScanner } from './json-value-scanner.js';
import { matchMarker, PARTIAL } from './match-marker.js';
import type { ScannerSink } from './scanner-sink.js';

const enum M {
  AfterMarker,
  Name,
  Id,
  ArgsStart,
  Args,
  ListStart,
  Element,
  ListNext,
  ElementStart,
}

const ARGS = '[ARGS]';
const CALL_ID = '[CALL_ID]';
const NAME_ENDS = [ARGS, CALL_ID];
const ID_ENDS = [ARGS];

/** Tool names as providers accept them. Anything else (a space, say) means this is prose. */
function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 45 || c === 46;
}

export class MistralScanner extends JsonCallScanner {
  private ms = M.AfterMarker;
  private held = '';
  private callName = '';
  private readonly args = new JsonValueScanner();

  constructor(sink: ScannerSink, opts: ScannerOptions) {
    super(sink, opts, ['[TOOL_CALLS]']);
  }

  protected openSpan(): void {
    this.ms = M.AfterMarker;
    this.held = '';
  }

  protected spanStep(text: string, i: number, n: number, eof: boolean): number {
    while (i < n && this.inSpan) {
      const c = text.charCodeAt(i);
      switch (this.ms) {
        case M.AfterMarker:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 91) {
            this.ms = M.ListStart;
            i++;
            continue;
          }
          if (!isNameChar(c)) return this.failAt(text, i);
          this.ms = M.Name;
          continue;
        case M.Name:
        case M.Id: {
          let j = i;
          while (j < n && isNameChar(text.charCodeAt(j))) j++;
          this.held += text.slice(i, j);
          if (this.ms === M.Name) this.checkNameText(this.held);
          else this.checkIdText(this.held);
          if (j === n) return n;
          if (text.charCodeAt(j) !== 91 || (this.held.length === 0 && this.ms === M.Name)) return this.failAt(text, j);
          const m = matchMarker(text, j, n, this.ms === M.Name ? NAME_ENDS : ID_ENDS);
          if (m === PARTIAL && !eof) return this.stall(j);
          if (m < 0) return this.failAt(text, j);
          i = j + (m === 0 ? ARGS.length : CALL_ID.length);
          if (this.ms === M.Name) this.callName = this.held;
          if (m === 1) {
            this.ms = M.Id;
            this.held = '';
            continue;
          }
          if (this.tools.has(this.callName)) this.startCall(this.callName, this.ms === M.Id ? this.held : null);
          else this.notACall(text, i);
          this.ms = M.ArgsStart;
          continue;
        }
        case M.ArgsStart:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c !== 123) return this.failAt(text, i);
          this.args.reset();
          this.ms = M.Args;
          continue;
        case M.Args: {
          const j = this.args.feed(text, i, n);
          if (this.args.failed) return this.failAt(text, j);
          const done = this.args.done;
          // Hold the closing `}` until the call is confirmed, which is right now.
          const to = done ? j - 1 : j;
          if (this.started && to > i) this.sink.args(text.slice(i, to));
          if (!done) return j;
          if (this.started) this.confirmCall('}');
          this.finishSpan(text, j);
          return j;
        }
        case M.ListStart:
        case M.ElementStart:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 93 && this.ms === M.ListStart) {
            // `[TOOL_CALLS][]` calls nothing: it stays as written.
            this.notACall(text, i + 1);
            this.finishSpan(text, i + 1);
            return i + 1;
          }
          if (c !== 123) return this.failAt(text, i);
          this.beginObject(true);
          this.ms = M.Element;
          continue;
        case M.Element:
          i = this.readObject(text, i, n);
          if (!this.inSpan || !this.objectDone) return i;
          if (this.objectIsCall) this.confirmCall(this.argsTail);
          // The separator that follows belongs to the next element's span.
          this.restartSpan(text, i);
          this.ms = M.ListNext;
          continue;
        case M.ListNext:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 44) {
            this.ms = M.ElementStart;
            i++;
            continue;
          }
          if (c === 93) {
            this.finishSpan(text, i + 1);
            return i + 1;
          }
          return this.failAt(text, i);
      }
    }
    return i;
  }

  protected spanEof(): void {
    this.failSpan('', 0);
  }

  private failAt(text: string, at: number): number {
    this.failSpan(text, at);
    return at;
  }
}
