// Starts a real kiln server on a free loopback port for a test, and small SSE helpers for raw
// fetch checks.
import { Runtime, type LoadOptions } from '../../src/runtime/runtime.js';
import { createServer, type KilnServer, type ServerOptions } from '../../src/server/create-server.js';
import type { ServedRuntime, ServerLogger } from '../../src/server/server-context.js';
import { MODELS } from '../helpers/paths.js';

export const STORIES = `${MODELS}/stories260K.gguf`;

export interface Running {
  url: string;
  server: KilnServer;
  runtime: Runtime;
  logs: { level: string; msg: string; fields?: object }[];
  close(): Promise<void>;
}

export function memoryLogger(logs: Running['logs']): ServerLogger {
  return {
    info: (msg, fields) => void logs.push({ level: 'info', msg, ...(fields ? { fields } : {}) }),
    warn: (msg, fields) => void logs.push({ level: 'warn', msg, ...(fields ? { fields } : {}) }),
    error: (msg, fields) => void logs.push({ level: 'error', msg, ...(fields ? { fields } : {}) }),
  };
}

/** Starts a server; `wrap` may put a spy between the server and the runtime. */
export async function startServer(
  load: Partial<LoadOptions> & Record<string, unknown> = {},
  options: Partial<ServerOptions> = {},
  wrap: (rt: ServedRuntime) => ServedRuntime = (rt) => rt,
): Promise<Running> {
  const runtime = await Runtime.load({ model: STORIES, threads: 1, ...load } as LoadOptions);
  const logs: Running['logs'] = [];
  const served = wrap(runtime);
  const server = createServer({ runtime: served, modelId: 'stories260K', logger: memoryLogger(logs), ...options });
  const { url } = await server.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    server,
    runtime,
    logs,
    async close() {
      await server.close({ graceMs: 1000 });
      await runtime.close();
    },
  };
}

export interface SseEvent {
  event: string | null;
  data: string;
}

/** Splits an SSE body into events (event name, data), as a client would. */
export function parseSse(body: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of body.split('\n\n')) {
    if (block.trim() === '') continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    out.push({ event, data: data.join('\n') });
  }
  return out;
}

/** A response whose JSON body the test reads freely (fetch types it as unknown). */
export type JsonResponse = Omit<Response, 'json'> & { json(): Promise<any> };

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** One request a client sent, with the status and body of the reply. */
export interface Exchange {
  body: any;
  status: number;
  reply: string;
}

/** A fetch for a client's `fetch` option that records each request body with its reply. */
export function recordingFetch(log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    log.push({ body: typeof init?.body === 'string' ? JSON.parse(init.body) : null, status: res.status, reply: await res.clone().text() });
    return res;
  };
}
