// kiln's HTTP server: a fastify app with the OpenAI and Anthropic routes, one error mapping, an
// optional API key, a body limit, per-request metrics, graceful shutdown, and what keeps hostile
// clients and web pages out: JSON bodies only, Origin and Host checks, timeouts for slow
// requests, and connection limits.
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { createServer as createHttpServer, type Server } from 'node:http';
import { InvalidArgumentError } from '../errors.js';
import { checkApiKey } from './auth.js';
import { BrowserGuard, isLoopbackBind } from './browser-guard.js';
import { ConnectionLimits, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_CLIENT } from './connection-limits.js';
import { errorBody, type Protocol, toKilnError } from './error-body.js';
import {
  BodyTooDeepError, InvalidUtf8Error, MalformedJsonError, RouteNotFoundError, ServerShuttingDownError, TooManyConnectionsError,
  UnsupportedMediaTypeError,
} from './errors.js';
import { DEFAULT_RESPONSES_STORE_BYTES } from './responses-store.js';
import { registerChatCompletions } from './routes/chat-completions.js';
import { registerCompletions } from './routes/completions.js';
import { registerHealth } from './routes/health.js';
import { registerMessages } from './routes/messages.js';
import { registerMetrics } from './routes/metrics.js';
import { registerModels } from './routes/models.js';
import { registerResponses } from './routes/responses.js';
import { ServerContext, type ServedRuntime, type ServerLogger } from './server-context.js';

export const DEFAULT_BODY_LIMIT = 8 * 1024 * 1024;
export const DEFAULT_RESPONSES_STORE = 1000;
/** How long shutdown lets in-flight generations finish before cancelling them. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/** A request's headers must arrive within this; a client that trickles them is cut off. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** A request's headers and body must arrive within this (8 MiB in 60 s is 140 KB/s). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** An idle keep-alive connection is closed after this. */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * Nesting of arrays and objects in a request body. Real requests stay far below (tool schemas nest
 * a few dozen levels); fields that hold arbitrary JSON have their own, lower, named limits.
 */
export const MAX_BODY_DEPTH = 512;

export interface ServerOptions {
  runtime: ServedRuntime;
  /** The name clients send as `model`; default: the model file's name without `.gguf`. */
  modelId: string;
  /** When set, every route but /health requires it (Bearer or x-api-key). */
  apiKey?: string;
  /** Largest request body in bytes; default 8 MiB. */
  bodyLimit?: number;
  /** Responses kept for previous_response_id (LRU); default 1000. */
  responsesStoreSize?: number;
  /** Bytes the stored responses may take together; default 256 MiB. */
  responsesStoreBytes?: number;
  /** Web origins allowed to call the server (CORS), or ['*']; default none. */
  corsOrigins?: readonly string[];
  /** Connections held at once; default 512. */
  maxConnections?: number;
  /** Connections held at once from one client address; default 128. */
  maxConnectionsPerClient?: number;
  /** Time for a request's headers to arrive; default 10 s. */
  headersTimeoutMs?: number;
  /** Time for a whole request (headers and body) to arrive; default 60 s. */
  requestTimeoutMs?: number;
  /** How long a stream waits for a client that reads nothing of its waiting frames; default 30 s. */
  sseStallTimeoutMs?: number;
  logger?: ServerLogger;
}

export interface KilnServer {
  readonly app: FastifyInstance;
  readonly context: ServerContext;
  /** Starts listening; resolves with the bound address. */
  listen(opts?: { host?: string; port?: number }): Promise<{ host: string; port: number; url: string }>;
  /**
   * Stops accepting requests, lets in-flight ones finish for up to `graceMs`, then cancels the
   * rest, and resolves once every connection is closed.
   */
  close(opts?: { graceMs?: number }): Promise<void>;
}

export const SILENT_LOGGER: ServerLogger = { info() {}, warn() {}, error() {} };

export const STDERR_LOGGER: ServerLogger = {
  info: (msg, fields) => log('info', msg, fields),
  warn: (msg, fields) => log('warn', msg, fields),
  error: (msg, fields) => log('error', msg, fields),
};

function log(level: string, msg: string, fields?: object): void {
  process.stderr.write(`${new Date().toISOString()} ${level} ${msg}${fields ? ' ' + JSON.stringify(fields) : ''}\n`);
}

function protocolOf(request: FastifyRequest): Protocol {
  return request.url.startsWith('/v1/messages') ? 'anthropic' : 'openai';
}

export function createServer(options: ServerOptions): KilnServer {
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const logger = options.logger ?? STDERR_LOGGER;
  if (options.apiKey !== undefined && options.apiKey.trim() === '') {
    throw new InvalidArgumentError('the API key is empty; an empty key would let every request in. Set a non-empty key, or none.', 'apiKey');
  }
  const ctx = new ServerContext(options.runtime, options.modelId, logger, options.responsesStoreSize ?? DEFAULT_RESPONSES_STORE,
    options.responsesStoreBytes ?? DEFAULT_RESPONSES_STORE_BYTES);
  if (options.sseStallTimeoutMs !== undefined) ctx.sseStallTimeoutMs = options.sseStallTimeoutMs;
  const guard = new BrowserGuard({ corsOrigins: options.corsOrigins ?? [] });
  const limits = new ConnectionLimits(options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, options.maxConnectionsPerClient ?? DEFAULT_MAX_CONNECTIONS_PER_CLIENT);
  const serverFactory = (handler: Parameters<typeof createHttpServer>[1]): Server => {
    const server = createHttpServer({
      headersTimeout: options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
      requestTimeout: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      keepAliveTimeout: DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
      // How often Node looks for requests past their timeouts (default 30 s: a slow request would live that much longer).
      connectionsCheckingInterval: 500,
    }, handler);
    limits.attach(server);
    return server;
  };
  const app = Fastify({ logger: false, bodyLimit, return503OnClosing: false, forceCloseConnections: 'idle', serverFactory });

  // Bodies are JSON, sent as such: a web page cannot send that to another site without a CORS
  // preflight (a form or text/plain body it can), and the bytes must be UTF-8.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(new UnsupportedMediaTypeError(request.headers['content-type']), undefined);
  });
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_request, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new InvalidUtf8Error(), undefined);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return done(new MalformedJsonError((err as Error).message), undefined);
    }
    if (depthExceeds(value, MAX_BODY_DEPTH)) return done(new BodyTooDeepError(MAX_BODY_DEPTH), undefined);
    done(null, value);
  });

  // A callback hook, not an async one: no promise and no extra turn on every request's way in.
  app.addHook('onRequest', (request, reply, done) => {
    const res = reply.raw;
    res.once('close', () => ctx.metrics.request(request.routeOptions.url ?? 'unmatched', res.statusCode));
    try {
      limits.check(request.raw.socket);
      guard.check(request.headers, res);
      if (request.method === 'OPTIONS') {
        guard.preflight(res);
        void reply.code(204).send();
        return;
      }
      if (request.routeOptions.url === '/health') return done();
      if (ctx.draining) throw new ServerShuttingDownError();
      if (options.apiKey !== undefined) checkApiKey(options.apiKey, request.headers);
    } catch (err) {
      return done(err as Error);
    }
    done();
  });

  app.setErrorHandler((err, request, reply) => {
    const { error, internal } = toKilnError(err, bodyLimit);
    if (internal) logger.error('request failed', { method: request.method, url: request.url, error: String((err as Error)?.stack ?? err) });
    const retryAfter = (error as { retryAfter?: unknown }).retryAfter;
    if (typeof retryAfter === 'number') void reply.header('retry-after', String(retryAfter));
    if (error instanceof TooManyConnectionsError) void reply.header('connection', 'close');
    void reply.code(error.status).send(errorBody(protocolOf(request), error));
  });
  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send(errorBody(protocolOf(request), new RouteNotFoundError(request.method, request.url)));
  });

  registerHealth(app, ctx);
  registerModels(app, ctx);
  registerMetrics(app, ctx);
  registerCompletions(app, ctx);
  registerChatCompletions(app, ctx);
  registerResponses(app, ctx);
  registerMessages(app, ctx);

  return {
    app,
    context: ctx,
    async listen(opts = {}) {
      const host = opts.host ?? '127.0.0.1';
      guard.loopbackOnly = isLoopbackBind(host);
      await app.listen({ host, port: opts.port ?? 8080 });
      const addr = app.server.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : (opts.port ?? 8080);
      const urlHost = host.includes(':') ? `[${host}]` : host;
      return { host, port, url: `http://${urlHost}:${port}` };
    },
    async close(opts = {}) {
      ctx.draining = true;
      const closing = app.close();
      // close() drops the connections idle now; a keep-alive connection whose stream ends later
      // would otherwise hold shutdown until the client's keep-alive timer.
      const sweeper = setInterval(() => app.server.closeIdleConnections(), 50);
      void closing.finally(() => clearInterval(sweeper));
      const grace = opts.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), grace)));
      const expired = await Promise.race([closing.then(() => false), timedOut]);
      clearTimeout(timer);
      if (expired) {
        logger.warn('shutdown grace period over; cancelling in-flight generations', { graceMs: grace });
        ctx.cancelGenerations();
        await closing;
      }
    },
  };
}

/** Whether arrays and objects nest deeper than `limit` in a parsed JSON value (no recursion). */
function depthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
