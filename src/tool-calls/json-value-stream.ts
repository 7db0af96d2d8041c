// Streams a qwen3_coder value typed `object` or `array` while the model writes it. The final parse
// (typed-json-value.ts) gives the trimmed text verbatim when it is one JSON value of that kind and a
// string otherwise, and the two differ from their first character on: no prefix of the value is
// safe for every ending. So the stream commits to JSON once the character after the opening
// bracket is JSON (that rejects the usual Python literals, `{'a': 1}`, `['x']`, `[True]`, before
// anything is sent), then sends the text as the JSON scanner accepts it. Held back: whitespace
// around the value (trimmed by the final parse), the bracket until that commit, and the closing
// bracket until the value ends, so a client never sees a complete value that may still turn out
// not to be JSON. A value that stops being JSON after the commit cannot be taken back; the caller
// then diverges (scanner-sink.ts) and the final parse says the rest.
import { isJsonWhitespace, JsonValueScanner } from './json-value-scanner.js';
import { isTrimmedSpace } from './typed-json-value.js';

const enum Phase {
  Lead, // whitespace before the opening bracket
  Open, // after the bracket, until the first character after it
  Live, // committed: text goes out as it is accepted
  Tail, // the value is complete: its closing bracket is held, only whitespace may follow
  NotJson,
}

export class JsonValueStream {
  private readonly json = new JsonValueScanner();
  private phase = Phase.Lead;
  private open = 0;
  /** Value text read and not sent: the bracket and what follows it until the commit, or the closing bracket. */
  private held = '';
  /**
   * The value is taken to be JSON and text has gone out (in a whole-text push, would have: the
   * decision depends on the text alone, never on how it was cut into pushes).
   */
  committed = false;

  /** A new value of the kind opened by `open` (`{` or `[`, as a code unit). */
  reset(open: number): void {
    this.json.reset();
    this.phase = Phase.Lead;
    this.open = open;
    this.held = '';
    this.committed = false;
  }

  /**
   * The next piece of the value's text. Returns the JSON text that may go out now (often ''), or
   * null once the value is known not to be a JSON value of its kind.
   */
  push(s: string): string | null {
    let out = '';
    const n = s.length;
    let i = 0;
    while (i < n) {
      switch (this.phase) {
        case Phase.Lead: {
          const c = s.charCodeAt(i);
          if (isTrimmedSpace(c)) {
            i++;
            continue;
          }
          if (c !== this.open) return this.notJson();
          this.json.feed(s, i, i + 1);
          this.held = s.charAt(i);
          this.phase = Phase.Open;
          i++;
          continue;
        }
        case Phase.Open: {
          let j = i;
          while (j < n && isJsonWhitespace(s.charCodeAt(j))) j++;
          if (j === n) {
            this.held += s.slice(i);
            return out;
          }
          // The scanner skips whitespace after a bracket: feeding it the one character is enough.
          this.json.feed(s, j, j + 1);
          if (this.json.failed) return this.notJson();
          this.held += s.slice(i, j + 1);
          i = j + 1;
          if (this.json.done) {
            // `{}` / `[ ]`: complete before anything went out; all of it waits for the value's end.
            this.phase = Phase.Tail;
            continue;
          }
          out = this.held;
          this.held = '';
          this.committed = true;
          this.phase = Phase.Live;
          continue;
        }
        case Phase.Live: {
          const k = this.json.feed(s, i, n);
          if (this.json.failed) return this.notJson();
          if (!this.json.done) return i === 0 ? s : out + s.slice(i);
          out += s.slice(i, k - 1);
          this.held = s.charAt(k - 1);
          this.phase = Phase.Tail;
          i = k;
          continue;
        }
        case Phase.Tail:
          if (!isTrimmedSpace(s.charCodeAt(i))) return this.notJson();
          i++;
          continue;
        case Phase.NotJson:
          return null;
      }
    }
    return out;
  }

  /** The value ended: the held rest of a complete JSON value, or null when it is not one. */
  end(): string | null {
    return this.phase === Phase.Tail ? this.held : null;
  }

  private notJson(): null {
    this.phase = Phase.NotJson;
    this.held = '';
    return null;
  }
}
