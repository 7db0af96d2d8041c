// The one place an error becomes an HTTP status and a protocol error body. KilnErrors carry their
// own status, type, code and param; fastify's own 4xx errors are mapped to KilnErrors; anything
// else is a plain 500 whose body says nothing about the cause (the log has it).
import { KilnError } from '../errors.js';
import { HttpError, MalformedJsonError, RequestTooLargeError } from './errors.js';

export type Protocol = 'openai' | 'anthropic';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface AnthropicErrorBody {
  type: 'error';
  /** `details` (its `error_code` and more) for the errors whose KilnError carries them. */
  error: { type: string; message: string; details?: object };
}

class InternalError extends KilnError {
  readonly code = 'internal_error';
  constructor() {
    super('The server had an internal error. The request was not completed; the server log has the details.');
  }
}

/**
 * Turns anything thrown into the KilnError the client sees; `internal` says whether to log it.
 * `bodyLimit` is quoted by the 413 message.
 */
export function toKilnError(err: unknown, bodyLimit = 0): { error: KilnError; internal: boolean } {
  if (err instanceof KilnError) return { error: err, internal: err.status >= 500 && err.status !== 503 };
  const fst = err as { code?: unknown; statusCode?: unknown; message?: unknown } | null;
  if (fst && typeof fst.code === 'string' && fst.code.startsWith('FST_') && typeof fst.statusCode === 'number' && fst.statusCode < 500) {
    if (fst.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { error: new RequestTooLargeError(bodyLimit), internal: false };
    if (fst.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { error: new MalformedJsonError('the body is empty'), internal: false };
    return { error: new HttpError(fst.statusCode, fst.code.slice(4).toLowerCase(), String(fst.message)), internal: false };
  }
  return { error: new InternalError(), internal: true };
}

export function openAIErrorBody(err: KilnError): OpenAIErrorBody {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.code } };
}

export function anthropicErrorBody(err: KilnError): AnthropicErrorBody {
  const body: AnthropicErrorBody = { type: 'error', error: { type: anthropicErrorType(err.status), message: err.message } };
  const details = (err as { details?: unknown }).details;
  if (typeof details === 'object' && details !== null) body.error.details = details;
  return body;
}

export function errorBody(protocol: Protocol, err: KilnError): OpenAIErrorBody | AnthropicErrorBody {
  return protocol === 'anthropic' ? anthropicErrorBody(err) : openAIErrorBody(err);
}

/** Anthropic names errors by status (docs: "Errors"). */
function anthropicErrorType(status: number): string {
  switch (status) {
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 503:
    case 529: return 'overloaded_error';
    default: return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}
