// The base of every error kiln raises on purpose. Each subclass names its code and HTTP status;
// the server maps these to the OpenAI or Anthropic error body in one place.
export abstract class KilnError extends Error {
  abstract readonly code: string;
  /** HTTP status when this error reaches a client. */
  readonly status: number = 500;
  /** OpenAI error `type`. */
  readonly type: string = 'server_error';
  /** The request field at fault, when there is one. */
  param: string | null = null;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A caller passed an option or argument kiln cannot use. */
export class InvalidArgumentError extends KilnError {
  readonly code = 'invalid_argument';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(message: string, param?: string) {
    super(message);
    if (param !== undefined) this.param = param;
  }
}

/** The native addon could not be loaded or lacks a feature. */
export class NativeAddonError extends KilnError {
  readonly code = 'native_addon_unavailable';
}

/** Longest part of a client's string an error message quotes: messages never echo a request whole. */
export const MAX_QUOTED_CHARS = 64;

/** A client's string for an error message: JSON-quoted, cut to its first MAX_QUOTED_CHARS characters. */
export function quote(s: string): string {
  return s.length <= MAX_QUOTED_CHARS ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, MAX_QUOTED_CHARS))}... (${s.length} characters)`;
}
