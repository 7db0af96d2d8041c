// hermes (Hermes, Qwen2.5, Qwen3): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, with or
// without whitespace around the JSON. A call is confirmed at `</tool_call>`, or at the end of the
// output when only whitespace follows its object (generation stopped before the closer).
import type { ScannerOptions } from './format-scanner.js';
import { isJsonWhitespace } from './json-value-scanner.js';
import { matchMarker, NO_MATCH, PARTIAL } from './match-marker.js';
import { JsonCallScanner } from './json-call-scanner.js';
import type { ScannerSink } from './scanner-sink.js';

const CLOSE = ['</tool_call>'];

export class HermesScanner extends JsonCallScanner {
  private afterObject = false;

  constructor(sink: ScannerSink, opts: ScannerOptions) {
    super(sink, opts, ['<tool_call>']);
  }

  protected openSpan(): void {
    this.afterObject = false;
    this.beginObject(false);
  }

  protected spanStep(text: string, i: number, n: number, eof: boolean): number {
    if (!this.afterObject) {
      i = this.readObject(text, i, n);
      if (!this.inSpan || !this.objectDone) return i;
      this.afterObject = true;
    }
    while (i < n) {
      const c = text.charCodeAt(i);
      if (isJsonWhitespace(c)) {
        i++;
        continue;
      }
      const m = c === 60 ? matchMarker(text, i, n, CLOSE) : NO_MATCH;
      if (m === PARTIAL && !eof) return this.stall(i);
      if (m === 0) {
        const end = i + CLOSE[0]!.length;
        if (this.objectIsCall) this.confirmCall(this.argsTail);
        this.finishSpan(text, end);
        return end;
      }
      this.failSpan(text, i);
      return i;
    }
    return i;
  }

  protected spanEof(): void {
    if (this.afterObject && this.objectIsCall) this.confirmCall(this.argsTail);
    if (this.afterObject) this.finishSpan('', 0);
    else this.failSpan('', 0);
  }
}
