// The stop-string stage of the streaming chain: passes generated text through, holding back only a
// tail that could still grow into a stop string, and ends the stream where one completes.
import { InvalidArgumentError } from '../errors.js';

/** More stop strings than this is not a real request; each one is scanned on every push. */
export const MAX_STOP_STRINGS = 64;
/** Longer stop strings make the per-token hold-back scan quadratic for no real use. */
export const MAX_STOP_LENGTH = 1024;

export interface StopDetectorResult {
  /** Text safe to emit now. */
  text: string;
  /** True once a stop string has completed; `text` is then everything before it. */
  stopped: boolean;
}

export class StopDetector {
  private readonly stops: readonly string[];
  private readonly longest: number;
  private held = '';
  private stopped = false;
  /** The stop string that ended the stream; null until one does. */
  matched: string | null = null;

  /** Throws InvalidArgumentError (param `stop`) for an empty, ill-formed or oversized list entry. */
  constructor(stops: readonly string[]) {
    if (stops.length > MAX_STOP_STRINGS) {
      throw new InvalidArgumentError(`stop accepts at most ${MAX_STOP_STRINGS} strings, got ${stops.length}.`, 'stop');
    }
    for (const s of stops) {
      if (typeof s !== 'string' || s.length === 0 || s.length > MAX_STOP_LENGTH) {
        throw new InvalidArgumentError(
          `each stop string must be a non-empty string of at most ${MAX_STOP_LENGTH} UTF-16 units, got ${JSON.stringify(s)}.`,
          'stop',
        );
      }
      // A lone surrogate could match half of a pair and split a character. (With the u flag a
      // pair is one code point, so this class matches only lone surrogates.)
      if (/[\uD800-\uDFFF]/u.test(s)) throw new InvalidArgumentError('stop strings must be well-formed Unicode (no lone surrogates).', 'stop');
    }
    this.stops = [...stops];
    this.longest = Math.max(0, ...stops.map((s) => s.length));
  }

  /**
   * Takes the next piece of generated text. When several stop strings complete in it, the one
   * that ends first wins (ties: the one that starts first), which is what any chunking of the
   * same text would see, since generation halts at the first completion.
   */
  push(text: string): StopDetectorResult {
    if (this.stopped) return { text: '', stopped: true };
    const buffer = this.held + text;

    let stopStart = -1;
    let stopEnd = Infinity;
    for (const s of this.stops) {
      const at = buffer.indexOf(s);
      if (at >= 0 && (at + s.length < stopEnd || (at + s.length === stopEnd && at < stopStart))) {
        stopStart = at;
        stopEnd = at + s.length;
      }
    }
    if (stopStart >= 0) {
      this.stopped = true;
      this.held = '';
      this.matched = buffer.slice(stopStart, stopEnd);
      return { text: buffer.slice(0, stopStart), stopped: true };
    }

    const keepFrom = this.holdBackStart(buffer);
    this.held = buffer.slice(keepFrom);
    return { text: buffer.slice(0, keepFrom), stopped: false };
  }

  /** Ends the stream: the held-back text, which can no longer become a stop string. */
  finish(): string {
    const rest = this.stopped ? '' : this.held;
    this.held = '';
    return rest;
  }

  /**
   * Where the longest suffix of `buffer` that is a proper prefix of a stop string begins, so it is
   * held back; a trailing high surrogate is held too, so a pair is never split across pushes.
   */
  private holdBackStart(buffer: string): number {
    const n = buffer.length;
    let start = n;
    for (let from = Math.max(0, n - this.longest + 1); from < n; from++) {
      if (this.stops.some((s) => isProperPrefixAt(buffer, from, s))) {
        start = from;
        break;
      }
    }
    const last = n > 0 ? buffer.charCodeAt(n - 1) : 0;
    if (start === n && last >= 0xd800 && last <= 0xdbff) start = n - 1;
    return start;
  }
}

/** True when buffer[from..] is a proper prefix of `stop`. */
function isProperPrefixAt(buffer: string, from: number, stop: string): boolean {
  const length = buffer.length - from;
  if (length >= stop.length) return false;
  for (let j = 0; j < length; j++) if (buffer.charCodeAt(from + j) !== stop.charCodeAt(j)) return false;
  return true;
}
