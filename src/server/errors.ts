// Errors only the HTTP layer raises: transport problems (body, JSON, UTF-8, size), keys, routes and
// models. Request fields that fail validation raise InvalidArgumentError naming the field.
import { KilnError, quote } from '../errors.js';

export class MalformedJsonError extends KilnError {
  readonly code = 'invalid_json';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(detail: string) {
    super(`The request body is not valid JSON (${detail}). Send a JSON object with Content-Type: application/json.`);
  }
}

export class InvalidUtf8Error extends KilnError {
  readonly code = 'invalid_utf8';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor() {
    super('The request body is not valid UTF-8. Encode the JSON body as UTF-8.');
  }
}

export class RequestTooLargeError extends KilnError {
  readonly code = 'request_too_large';
  override readonly status = 413;
  override readonly type = 'invalid_request_error';
  constructor(limit: number) {
    super(`The request body is larger than the server's limit of ${limit} bytes. Send less, or start the server with a larger --body-limit.`);
  }
}

export class AuthenticationError extends KilnError {
  readonly code = 'invalid_api_key';
  override readonly status = 401;
  override readonly type = 'invalid_request_error';
  constructor(found: boolean) {
    super(
      found
        ? 'The API key is not valid. Send the key the server was started with.'
        : 'An API key is required. Send it as "Authorization: Bearer KEY" (or "x-api-key: KEY").',
    );
  }
}

export class ModelNotFoundError extends KilnError {
  readonly code = 'model_not_found';
  override readonly status = 404;
  override readonly type = 'invalid_request_error';
  override param = 'model';
  constructor(requested: string, served: string) {
    super(`The model ${quote(requested)} does not exist on this server; it serves ${quote(served)}. Send "model": ${JSON.stringify(served)}.`);
  }
}

export class RouteNotFoundError extends KilnError {
  readonly code = 'not_found';
  override readonly status = 404;
  override readonly type = 'invalid_request_error';
  constructor(method: string, url: string) {
    super(`There is no route ${quote(method)} ${quote(url)}. See GET /v1/models, POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages.`);
  }
}

export class ServerShuttingDownError extends KilnError {
  readonly code = 'server_shutting_down';
  override readonly status = 503;
  override readonly type = 'server_error';
  constructor() {
    super('The server is shutting down and accepts no new requests.');
  }
}

/** A generation was cut short because the server is stopping. */
export class GenerationCancelledError extends KilnError {
  readonly code = 'generation_cancelled';
  override readonly status = 503;
  override readonly type = 'server_error';
  constructor() {
    super('The generation was cancelled because the server is shutting down.');
  }
}

/** An HTTP-level failure fastify detected (such as an unsupported method or media type) with its status. */
export class HttpError extends KilnError {
  readonly code: string;
  override readonly status: number;
  override readonly type = 'invalid_request_error';
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A response id (previous_response_id, or GET /v1/responses/:id) that is not, or no longer, stored. */
export class ResponseNotFoundError extends KilnError {
  readonly code = 'previous_response_not_found';
  override readonly status = 404;
  override readonly type = 'invalid_request_error';
  override param = 'previous_response_id';
  constructor(id: string) {
    super(`No stored response has the id ${quote(id)}. It was never stored (store: false), or it was evicted; send the whole conversation instead.`);
  }
}

/** A body that is not `Content-Type: application/json` (a browser's cross-site "simple" POST is form or text). */
export class UnsupportedMediaTypeError extends KilnError {
  readonly code = 'unsupported_media_type';
  override readonly status = 415;
  override readonly type = 'invalid_request_error';
  constructor(found: string | undefined) {
    super(`The request body must be sent with Content-Type: application/json${found ? `, not ${quote(found)}` : ''}.`);
  }
}

/** A request from a web page whose origin the server was not told to allow (see --cors-origin). */
export class OriginNotAllowedError extends KilnError {
  readonly code = 'origin_not_allowed';
  override readonly status = 403;
  override readonly type = 'invalid_request_error';
  constructor(origin: string) {
    super(`Requests from the web origin ${quote(origin)} are not allowed. Start the server with --cors-origin ${quote(origin)} to allow them.`);
  }
}

/**
 * A request naming a host other than a loopback one while the server listens on loopback: a web
 * page that rebound its own host name to 127.0.0.1 (DNS rebinding) looks like this.
 */
export class HostNotAllowedError extends KilnError {
  readonly code = 'host_not_allowed';
  override readonly status = 403;
  override readonly type = 'invalid_request_error';
  constructor(host: string) {
    super(`The Host header ${quote(host)} is not a loopback name or address; this server listens on loopback only. Use http://127.0.0.1 or http://localhost.`);
  }
}

/** More connections than the server takes (overall, or from one client address). */
export class TooManyConnectionsError extends KilnError {
  readonly code = 'too_many_connections';
  override readonly status = 503;
  override readonly type = 'server_error';
  /** Seconds a client should wait before trying again (the Retry-After header). */
  readonly retryAfter = 1;
  constructor(perClient: boolean, limit: number) {
    super(`The server has ${perClient ? 'as many connections from your address as it takes' : 'as many connections as it takes'} (${limit}). Close idle connections, or retry shortly.`);
  }
}

/** JSON nested deeper than any request needs: refused before any work, so no recursion can overflow. */
export class BodyTooDeepError extends KilnError {
  readonly code = 'body_too_deep';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(limit: number) {
    super(`The request body is nested deeper than ${limit} levels of arrays and objects. Send flatter JSON.`);
  }
}

/** An `item_reference` to an item kiln does not hold: not produced here, not stored, or evicted. */
export class ItemNotFoundError extends KilnError {
  readonly code = 'item_not_found';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  constructor(id: string, param: string) {
    super(
      `No stored response holds the item ${quote(id)}: its response was not stored (store: false) or has been evicted. `
        + 'Send the item itself instead of a reference to it (clients do when the request says store: false).',
    );
    this.param = param;
  }
}

/**
 * An Anthropic request with `thread` (message threads): kiln keeps no threads. The details are
 * what the SDK's thread helper reads to send the turn again with the whole conversation.
 */
export class ThreadUnsupportedError extends KilnError {
  readonly code = 'thread_unsupported_request';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  override param = 'thread';
  readonly details = { error_code: 'thread_unsupported_request', unsupported: ['thread'] };
  constructor() {
    super('This server does not keep message threads: send the whole conversation in `messages`, without `thread`.');
  }
}
