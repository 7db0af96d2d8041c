// kiln's HTTP server: a fastify app with the OpenAI and Anthropic routes, one error mapping, an
// optional API key, a body limit, per-request metrics, and graceful shutdown.
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { checkApiKey } from './auth.js';
import { errorBody, type Protocol, toKilnError } from './error-body.js';
import { InvalidUtf8Error, MalformedJsonError, RouteNotFoundError, ServerShuttingDownError } from './errors.js';
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
  const ctx = new ServerContext(options.runtime, options.modelId, logger, options.responsesStoreSize ?? DEFAULT_RESPONSES_STORE);
  const app = Fastify({ logger: false, bodyLimit, return503OnClosing: false, forceCloseConnections: 'idle' });

  // Every body is JSON whatever its Content-Type says (curl -d sends form encoding); the bytes
  // must be UTF-8.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body: Buffer, done) => {
    if (body.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return done(new InvalidUtf8Error(), undefined);
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new MalformedJsonError((err as Error).message), undefined);
    }
  });

  // A callback hook, not an async one: no promise and no extra turn on every request's way in.
  app.addHook('onRequest', (request, reply, done) => {
    const res = reply.raw;
    res.once('close', () => ctx.metrics.request(request.routeOptions.url ?? 'unmatched', res.statusCode));
    if (request.routeOptions.url === '/health') return done();
    try {
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
