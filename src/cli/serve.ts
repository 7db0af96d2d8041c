// `kiln serve`: loads a model and serves the OpenAI- and Anthropic-compatible HTTP API until
// SIGINT/SIGTERM, then stops accepting, lets in-flight generations finish (or cancels them after
// the grace period, or at once on a second signal), closes the runtime and exits 0.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidArgumentError } from '../errors.js';
import { AUTO_SLOTS, Runtime } from '../runtime/runtime.js';
import { DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_CLIENT } from '../server/connection-limits.js';
import {
  createServer, DEFAULT_BODY_LIMIT, DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_RESPONSES_STORE, DEFAULT_SHUTDOWN_GRACE_MS, STDERR_LOGGER,
} from '../server/create-server.js';
import { DEFAULT_RESPONSES_STORE_BYTES } from '../server/responses-store.js';

/**
 * Requests that may wait for a slot by default (Ollama's OLLAMA_MAX_QUEUE default): each holds its
 * prompt in memory, and past this many a client is better told to come back than left waiting.
 */
export const DEFAULT_MAX_QUEUE = 512;

export const SERVE_USAGE = `usage: kiln serve --model FILE [options]
  --chat-template FILE   Jinja chat template (for models whose GGUF has none)
  --parallel N           concurrent sequences (slots), batched into shared forward steps; more requests
                         queue in arrival order (default: ${AUTO_SLOTS}, fewer where their KV cache would take
                         more than a quarter of the machine's memory)
  --batch N              most tokens per forward step: every running sequence's next token, then
                         prefill chunks of new prompts (default 512)
  --max-queue N          requests that may wait for a slot; more get 503 with Retry-After (default ${DEFAULT_MAX_QUEUE})
  --ctx N                context size per sequence
  --threads N            CPU threads
  --host HOST            bind address (default 127.0.0.1)
  --port N               port (default 8080)
  --api-key KEY          require this key (also KILN_API_KEY; an empty key is refused); /health stays open
  --cors-origin ORIGIN   let web pages from ORIGIN call the server (repeat for more, or '*'); default: none
  --model-name NAME      the model id clients send (default: the file name without .gguf)
  --body-limit BYTES     largest request body (default ${DEFAULT_BODY_LIMIT})
  --responses-store N    responses kept for previous_response_id (default ${DEFAULT_RESPONSES_STORE})
  --responses-store-bytes BYTES  memory the stored responses may take (default ${DEFAULT_RESPONSES_STORE_BYTES})
  --max-connections N    connections held at once; more get 503 (default ${DEFAULT_MAX_CONNECTIONS})
  --max-connections-per-client N  the same, from one client address (default ${DEFAULT_MAX_CONNECTIONS_PER_CLIENT})
  --request-timeout MS   time for a request's headers and body to arrive (default ${DEFAULT_REQUEST_TIMEOUT_MS})
  --shutdown-grace MS    how long shutdown waits for in-flight requests (default ${DEFAULT_SHUTDOWN_GRACE_MS})
`;

export async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: 'string', short: 'm' },
      'chat-template': { type: 'string' },
      parallel: { type: 'string' },
      batch: { type: 'string' },
      'max-queue': { type: 'string' },
      ctx: { type: 'string' },
      threads: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'api-key': { type: 'string' },
      'cors-origin': { type: 'string', multiple: true },
      'responses-store-bytes': { type: 'string' },
      'max-connections': { type: 'string' },
      'max-connections-per-client': { type: 'string' },
      'request-timeout': { type: 'string' },
      'model-name': { type: 'string' },
      'body-limit': { type: 'string' },
      'responses-store': { type: 'string' },
      'shutdown-grace': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || !values.model) {
    process.stderr.write(SERVE_USAGE);
    return values.help ? 0 : 2;
  }
  const int = (name: string, v: string | undefined, min: number): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`--${name} must be an integer >= ${min}, got '${v}'`, name);
    return n;
  };
  const slots = int('parallel', values.parallel, 1);
  const maxBatch = int('batch', values.batch, 1);
  const maxQueue = int('max-queue', values['max-queue'], 0) ?? DEFAULT_MAX_QUEUE;
  const contextSize = int('ctx', values.ctx, 1);
  const threads = int('threads', values.threads, 1);
  const port = int('port', values.port, 0) ?? 8080;
  const grace = int('shutdown-grace', values['shutdown-grace'], 0) ?? DEFAULT_SHUTDOWN_GRACE_MS;
  const chatTemplate = values['chat-template'] !== undefined ? readFileSync(values['chat-template'], 'utf8') : undefined;
  const apiKey = values['api-key'] ?? process.env.KILN_API_KEY;
  if (apiKey !== undefined && apiKey.trim() === '') {
    throw new InvalidArgumentError(`${values['api-key'] !== undefined ? '--api-key' : 'KILN_API_KEY'} is empty; an empty key would let every request in. Give a key, or leave it unset.`, 'api-key');
  }
  const bodyLimit = int('body-limit', values['body-limit'], 1);
  const storeSize = int('responses-store', values['responses-store'], 0);
  const storeBytes = int('responses-store-bytes', values['responses-store-bytes'], 0);
  const maxConnections = int('max-connections', values['max-connections'], 1);
  const maxPerClient = int('max-connections-per-client', values['max-connections-per-client'], 1);
  const requestTimeout = int('request-timeout', values['request-timeout'], 1);

  const runtime = await Runtime.load({
    model: values.model,
    slots: slots ?? 'auto',
    ...(maxBatch !== undefined ? { maxBatch } : {}),
    maxQueue,
    ...(contextSize !== undefined ? { contextSize } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(chatTemplate !== undefined ? { chatTemplate } : {}),
  });
  const server = createServer({
    runtime,
    modelId: values['model-name'] ?? basename(values.model).replace(/\.gguf$/i, ''),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(bodyLimit !== undefined ? { bodyLimit } : {}),
    ...(storeSize !== undefined ? { responsesStoreSize: storeSize } : {}),
    ...(storeBytes !== undefined ? { responsesStoreBytes: storeBytes } : {}),
    ...(values['cors-origin'] !== undefined ? { corsOrigins: values['cors-origin'] } : {}),
    ...(maxConnections !== undefined ? { maxConnections } : {}),
    ...(maxPerClient !== undefined ? { maxConnectionsPerClient: maxPerClient } : {}),
    ...(requestTimeout !== undefined ? { requestTimeoutMs: requestTimeout } : {}),
    logger: STDERR_LOGGER,
  });
  const { url } = await server.listen({ host: values.host ?? '127.0.0.1', port });
  STDERR_LOGGER.info(`kiln serving '${server.context.modelId}' at ${url}`, { slots: runtime.info.slots, batch: runtime.info.maxBatch, contextSize: runtime.info.contextSize });

  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        STDERR_LOGGER.warn(`${signal} again: cancelling in-flight generations`);
        server.context.cancelGenerations();
        return;
      }
      stopping = true;
      STDERR_LOGGER.info(`${signal}: shutting down`);
      server.close({ graceMs: grace }).then(resolve, (err) => {
        STDERR_LOGGER.error('shutdown failed', { error: String(err) });
        resolve();
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  await runtime.close();
  return 0;
}
