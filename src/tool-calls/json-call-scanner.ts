// Reads the JSON object of one call, `{"name": …, "arguments": {…}}`, for the formats that write
// calls as JSON (hermes, mistral, llama3_json). The call starts as soon as its name is complete and
// declared; argument text streams as the model writes it, byte for byte, except the closing `}`,
// which is held until the format confirms the call. Keys other than the ones a call has, a wrong
// value type or a duplicate key make the object "not a call": still read to its end (string-aware),
// but as content. Text that is not JSON ends the span where it stops being JSON.
import { FormatScanner } from './format-scanner.js';
import { isJsonWhitespace, JsonValueScanner } from './json-value-scanner.js';
import { MAX_ID_BYTES, MAX_NAME_BYTES } from './limits.js';
import { ToolCallCapError } from './scanner-sink.js';

const enum R {
  Open,
  KeyOrEnd,
  Key,
  KeyString,
  Colon,
  ValueStart,
  Value,
  Next,
  Done,
}

const enum V {
  Name,
  Args,
  Id,
  Type,
  Other,
}

const KEY_NAME = 1;
const KEY_ARGS = 2;
const KEY_ID = 4;
const KEY_TYPE = 8;

/** The keys a call object may have, as JSON ("parameters" is Llama's "arguments"; "id" is Mistral's). */
const KEYS = new Map<string, [number, V]>([
  ['"name"', [KEY_NAME, V.Name]],
  ['"arguments"', [KEY_ARGS, V.Args]],
  ['"parameters"', [KEY_ARGS, V.Args]],
  ['"type"', [KEY_TYPE, V.Type]],
  ['"id"', [KEY_ID, V.Id]],
]);

function keyOf(raw: string): [number, V] | null {
  const key = KEYS.get(raw);
  if (key !== undefined) return key;
  // A key written with escapes (`"n\u0061me"`) is the same key.
  return raw.indexOf('\\') >= 0 ? (KEYS.get(JSON.stringify(JSON.parse(raw) as string)) ?? null) : null;
}

/** Longest raw key text worth decoding: every known key is shorter, even fully \u-escaped. */
const MAX_KEY_RAW = 80;

export abstract class JsonCallScanner extends FormatScanner {
  private rs = R.Done;
  private readonly vs = new JsonValueScanner();
  private allowId = false;
  private seen = 0;
  private valueKind = V.Other;
  /** Raw text (quotes included) of the key or string value being read. */
  private capture = '';
  private name: string | null = null;
  private modelId: string | null = null;
  /** Argument text read before the name (the call has not started yet). */
  private readonly argsHeld: string[] = [];
  private argsHeldLength = 0;
  private argsDone = false;
  /** The held final character of the arguments (`}`), sent when the call is confirmed. */
  protected argsTail = '';

  /** Prepares to read an object whose `{` is the next non-space character. */
  protected beginObject(allowId: boolean): void {
    this.rs = R.Open;
    this.allowId = allowId;
    this.seen = 0;
    this.name = null;
    this.modelId = null;
    if (this.argsHeld.length > 0) this.argsHeld.length = 0;
    this.argsHeldLength = 0;
    this.argsDone = false;
    this.argsTail = '';
  }

  protected get objectDone(): boolean {
    return this.rs === R.Done;
  }

  /** After objectDone: the object is a complete, valid call that has started. */
  protected get objectIsCall(): boolean {
    return this.started && !this.spanIsContent && this.argsDone;
  }

  /**
   * Reads from text[i..n). Returns where it stopped: n (needs more), just past the object's `}`
   * (objectDone), or where the span failed (failSpan has been called).
   */
  protected readObject(text: string, i: number, n: number): number {
    while (i < n) {
      const c = text.charCodeAt(i);
      switch (this.rs) {
        case R.Open:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c !== 123) return this.fail(text, i);
          this.rs = R.KeyOrEnd;
          i++;
          continue;
        case R.KeyOrEnd:
        case R.Key:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 125 && this.rs === R.KeyOrEnd) {
            // `{}` has no name: not a call.
            this.notACall(text, i);
            this.rs = R.Done;
            return i + 1;
          }
          if (c !== 34) return this.fail(text, i);
          this.vs.reset();
          this.capture = '';
          this.rs = R.KeyString;
          continue;
        case R.KeyString: {
          const j = this.vs.feed(text, i, n);
          if (this.vs.failed) return this.fail(text, j);
          if (this.capture.length <= MAX_KEY_RAW) this.take(text, i, j);
          i = j;
          if (!this.vs.done) return i;
          this.onKey(text, i);
          this.rs = R.Colon;
          continue;
        }
        case R.Colon:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c !== 58) return this.fail(text, i);
          this.rs = R.ValueStart;
          i++;
          continue;
        case R.ValueStart:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          this.beginValue(text, i, c);
          this.rs = R.Value;
          continue;
        case R.Value: {
          const j = this.vs.feed(text, i, n);
          if (this.vs.failed) return this.fail(text, j);
          this.valueText(text, i, j);
          i = j;
          if (!this.vs.done) return i;
          this.endValue(text, i);
          this.rs = R.Next;
          continue;
        }
        case R.Next:
          if (isJsonWhitespace(c)) {
            i++;
            continue;
          }
          if (c === 44) {
            this.rs = R.Key;
            i++;
            continue;
          }
          if (c !== 125) return this.fail(text, i);
          i++;
          this.rs = R.Done;
          if (!this.spanIsContent && !(this.seen & KEY_NAME && this.seen & KEY_ARGS)) this.notACall(text, i);
          return i;
        case R.Done:
          return i;
      }
    }
    return i;
  }

  private fail(text: string, at: number): number {
    this.rs = R.Done;
    this.failSpan(text, at);
    return at;
  }

  private take(text: string, from: number, to: number): void {
    if (to <= from) return;
    const s = text.slice(from, to);
    this.capture = this.capture.length === 0 ? s : this.capture + s;
  }

  /** The captured JSON string, decoded (the scanner has checked it is valid). */
  private captured(): string {
    const raw = this.capture;
    return raw.indexOf('\\') < 0 ? raw.slice(1, -1) : (JSON.parse(raw) as string);
  }

  private onKey(text: string, at: number): void {
    const key = this.capture.length <= MAX_KEY_RAW ? keyOf(this.capture) : null;
    if (key === null || (key[0] === KEY_ID && !this.allowId) || this.seen & key[0]) {
      // An unknown or repeated key: not a call.
      this.notACall(text, at);
      this.valueKind = V.Other;
      return;
    }
    this.seen |= key[0];
    this.valueKind = key[1];
  }

  private beginValue(text: string, at: number, c: number): void {
    this.vs.reset();
    this.capture = '';
    const kind = this.valueKind;
    const wanted = kind === V.Args ? 123 : kind === V.Other ? -1 : 34;
    if (wanted !== -1 && c !== wanted) {
      // Ids are only used when they are strings; any other wrong type is not a call.
      if (kind !== V.Id) this.notACall(text, at);
      this.valueKind = V.Other;
    }
  }

  private valueText(text: string, from: number, to: number): void {
    if (to <= from || this.spanIsContent) return;
    switch (this.valueKind) {
      case V.Name:
        this.take(text, from, to);
        // Raw text may be \u-escaped (6 characters per code unit); the decoded name is checked exactly.
        if (this.streaming && this.capture.length > 6 * MAX_NAME_BYTES + 2) throw new ToolCallCapError('name');
        return;
      case V.Id:
      case V.Type:
        this.take(text, from, to);
        if (this.streaming && this.capture.length > 6 * MAX_ID_BYTES + 2) throw new ToolCallCapError('id');
        return;
      case V.Args: {
        // The value just completed: hold its closing `}` until the call is confirmed.
        if (this.vs.done) {
          to--;
          this.argsTail = '}';
        }
        if (to <= from) return;
        const s = text.slice(from, to);
        if (this.started) this.sink.args(s);
        else {
          this.argsHeld.push(s);
          this.argsHeldLength += s.length;
          this.checkHeld(this.argsHeldLength);
        }
        return;
      }
      case V.Other:
        return;
    }
  }

  private endValue(text: string, at: number): void {
    if (this.spanIsContent) return;
    switch (this.valueKind) {
      case V.Name: {
        const name = this.captured();
        this.checkNameText(name);
        this.name = name;
        if (!this.tools.has(name)) {
          this.notACall(text, at);
          return;
        }
        this.startCall(name, this.modelId);
        if (this.argsHeld.length > 0) {
          this.sink.args(this.argsHeld.join(''));
          this.argsHeld.length = 0;
          this.argsHeldLength = 0;
        }
        return;
      }
      case V.Id:
        if (this.name === null) {
          this.modelId = this.captured();
          this.checkIdText(this.modelId);
        }
        return;
      case V.Type:
        if (this.captured() !== 'function') this.notACall(text, at);
        return;
      case V.Args:
        this.argsDone = true;
        return;
      case V.Other:
        return;
    }
  }
}
