// llama3_json (Llama 3.x): `{"name": …, "parameters": {…}}` (or "arguments") at the start of the
// output or after `<|python_tag|>`; more calls may follow, separated by `;` or whitespace. A bare
// `{` opens a call only where one may start: before any other content (thinking aside) or right
// after a call. A call is confirmed at its object's closing `}`.
import type { ScannerOptions } from './format-scanner.js';
import { isJsonWhitespace } from './json-value-scanner.js';
import { JsonCallScanner } from './json-call-scanner.js';
import type { ScannerSink } from './scanner-sink.js';

export class Llama3JsonScanner extends JsonCallScanner {
  /** Just after a call: one `;` here is a separator, not content. */
  private afterCall = false;

  constructor(sink: ScannerSink, opts: ScannerOptions) {
    super(sink, opts, ['<|python_tag|>']);
    this.candidate = true;
  }

  protected override atContentStart(text: string, i: number, n: number): number {
    let from = i;
    while (this.candidate && i < n) {
      const c = text.charCodeAt(i);
      if (isJsonWhitespace(c)) {
        i++;
        continue;
      }
      if (c === 59 && this.afterCall) {
        this.emitContent(text, from, i, true);
        this.afterCall = false;
        from = ++i;
        continue;
      }
      if (c === 123) {
        this.emitContent(text, from, i, true);
        this.beginSpan(i);
        this.beginObject(false);
        return i;
      }
      break;
    }
    this.emitContent(text, from, i, true);
    return i;
  }

  protected openSpan(): void {
    this.beginObject(false);
  }

  protected spanStep(text: string, i: number, n: number): number {
    i = this.readObject(text, i, n);
    if (!this.inSpan) {
      this.candidate = this.afterCall = false;
      return i;
    }
    if (!this.objectDone) return i;
    const isCall = this.objectIsCall;
    if (isCall) this.confirmCall(this.argsTail);
    this.finishSpan(text, i);
    this.candidate = this.afterCall = isCall;
    return i;
  }

  protected spanEof(): void {
    this.failSpan('', 0);
  }
}
