// `npm run bench -- server [--model FILE] [--tokens 128] [--runs 15] [--warmup 500]`: what the HTTP
// server adds on top of calling the runtime directly, for 1 and 4 concurrent streams: time to first
// token and time per streamed token, measured the way a client sees them.
//
// Three paths run in turn on one runtime: direct (runtime.complete() with onToken), kiln serve
// (POST /v1/completions, streaming), and a node:http floor that sends the same frames with no
// framework, validation, metrics or cancellation: what any Node server adds on this machine. The
// client is a separate process, in C (bench/server-client.c), that speaks HTTP/1.1 over keep-alive
// sockets with pre-built requests and times the bytes as they arrive, so what it measures is the
// server and the kernel, not an HTTP client library, and its own CPU time takes little from the
// server on a small machine. Each cell is the fastest of --runs (on a shared machine, the closest
// to an unloaded one), with the median beside it. The table is a server in steady state: --warmup
// runs of each path come first (all but the last 30 one token long), since a request path that has
// run only a handful of times is still interpreted JavaScript; the very first request after start
// is printed on its own line. Goal (issue 6): under 1 ms added to time to first token and under
// 50 µs added per token. Also printed: kiln serve's time from a request's arrival to the runtime
// call, its main thread's CPU time per streamed token beyond the direct path's (HTTP, encoding,
// socket writes), the client's CPU time per token, and how long the main thread waited for a CPU
// per token on each path (the machine's contention, which the timings include).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type CompleteOptions, Runtime } from '../src/runtime/runtime.js';
import { createServer, SILENT_LOGGER } from '../src/server/create-server.js';
import { OpenAIChatEncoder } from '../src/server/openai-chat-encoder.js';
import { OpenAICompletionEncoder } from '../src/server/openai-completion-encoder.js';
import { mintId, unixSeconds } from '../src/server/ids.js';
import type { ServedRuntime } from '../src/server/server-context.js';
import { argValue, formatTable, median } from './machine.js';

const REPO_ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const DEFAULT_MODEL = join(process.env.KILN_SHARED ?? join(REPO_ROOT, '..', 'shared'), 'models', 'stories260K.gguf');
const PROMPTS = ['Once upon a time', 'The little dog', 'Lily went to the park', 'One day, Tom'];

/** Per stream: ms to the first token, and ms per token after it. */
interface StreamTiming {
  ttft: number;
  perToken: number;
  tokens: number;
}

const CLIENT_SOURCE = join(REPO_ROOT, 'bench', 'server-client.c');
const CLIENT_BINARY = join(REPO_ROOT, '.cache', 'bench', 'server-client');

/** Builds the C client (bench/server-client.c) once, with the system C compiler. */
function buildClient(): string {
  if (existsSync(CLIENT_BINARY) && statSync(CLIENT_BINARY).mtimeMs >= statSync(CLIENT_SOURCE).mtimeMs) return CLIENT_BINARY;
  mkdirSync(dirname(CLIENT_BINARY), { recursive: true });
  const r = spawnSync(process.env.CC ?? 'cc', ['-O2', '-o', CLIENT_BINARY, CLIENT_SOURCE], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error(`bench server: could not compile ${CLIENT_SOURCE} with ${process.env.CC ?? 'cc'} (set CC to a C compiler)`);
  return CLIENT_BINARY;
}

/** The client process: one keep-alive socket per concurrent stream, reused across runs. */
class Client {
  private readonly child: ChildProcess;
  private readonly lines: AsyncIterator<string>;

  constructor() {
    this.child = spawn(buildClient(), [], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.lines = createInterface({ input: this.child.stdout! })[Symbol.asyncIterator]();
  }

  /** The streams' timings, and the client's own CPU time (µs) while it read them. */
  async run(port: number, streams: number, tokens: number): Promise<{ streams: StreamTiming[]; cpuMicros: number }> {
    const requests = PROMPTS.slice(0, streams).map((prompt) => {
      const json = JSON.stringify({ model: 'bench', prompt, max_tokens: tokens, temperature: 0, stream: true });
      return Buffer.from(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    });
    this.child.stdin!.write(Buffer.concat([Buffer.from(`${port} ${streams} ${requests.map((r) => r.length).join(' ')}\n`), ...requests]));
    const { value, done } = await this.lines.next();
    if (done) throw new Error('the bench client exited');
    return JSON.parse(value as string) as { streams: StreamTiming[]; cpuMicros: number };
  }

  close(): void {
    this.child.kill();
  }
}

async function direct(rt: Runtime, streams: number, tokens: number): Promise<StreamTiming[]> {
  return Promise.all(PROMPTS.slice(0, streams).map(async (prompt) => {
    const times: number[] = [];
    const t0 = performance.now();
    await rt.complete({ prompt, maxTokens: tokens, temperature: 0, onToken: () => void times.push(performance.now()) });
    return { ttft: times[0]! - t0, perToken: (times[times.length - 1]! - times[0]!) / Math.max(1, times.length - 1), tokens: times.length };
  }));
}

/** The main thread's time on a CPU and waiting for one, in µs: the server's JS and its socket writes run there. */
interface ThreadTime {
  cpu: number;
  wait: number;
}

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

/** Linux reports the main thread's times in ns; elsewhere the process's CPU time stands in (no wait). */
function threadTime(): ThreadTime {
  try {
    const [run, wait] = readFileSync(SCHEDSTAT, 'utf8').split(' ').map(Number);
    return { cpu: run! / 1000, wait: wait! / 1000 };
  } catch {
    const c = process.cpuUsage();
    return { cpu: c.user + c.system, wait: 0 };
  }
}

/** Runs `fn`, returning its result and the main thread's times meanwhile. */
async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; time: ThreadTime }> {
  const t0 = threadTime();
  const value = await fn();
  const t1 = threadTime();
  return { value, time: { cpu: t1.cpu - t0.cpu, wait: t1.wait - t0.wait } };
}

/** The chat encoder's cost per content token (frame building and JSON escaping), in µs. */
function encoderMicros(): number {
  const enc = new OpenAIChatEncoder({ id: 'chatcmpl-bench', model: 'bench', created: 0, includeUsage: false });
  const n = 200_000;
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) bytes += enc.push({ type: 'content', text: ' word' }).length;
  const us = ((performance.now() - t0) * 1000) / n;
  return bytes > 0 ? us : NaN;
}

/**
 * The floor: the least a Node HTTP server can add on this machine while sending the same bytes.
 * node:http with no framework, no validation, no metrics and no cancellation: the body parsed, the
 * prompt tokenized, kiln's own chunk encoder for the frames, frames of one turn in one write (as
 * SseStream does).
 */
async function floorServer(rt: Runtime): Promise<{ port: number; close(): Promise<void> }> {
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { prompt: string; max_tokens: number };
      const encoder = new OpenAICompletionEncoder({ id: mintId('cmpl-'), model: 'bench', created: unixSeconds(), includeUsage: false });
      let pending = '';
      const flush = () => {
        if (pending) res.write(pending);
        pending = '';
      };
      void rt.complete({
        prompt: rt.tokenize(body.prompt), maxTokens: body.max_tokens, temperature: 0,
        onStart: () => res.writeHead(200, { 'content-type': 'text/event-stream' }),
        onToken: (text) => {
          if (!pending) process.nextTick(flush);
          pending += encoder.push({ type: 'content', text });
        },
      }).then((r) => {
        flush();
        res.end(encoder.finish(r));
      }, (err: Error) => res.destroy(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const PATHS = ['direct', 'kiln serve', 'node:http floor'] as const;

export async function run(args: string[]): Promise<void> {
  const model = argValue(args, '--model') ?? DEFAULT_MODEL;
  const tokens = Number(argValue(args, '--tokens') ?? 128);
  const runs = Number(argValue(args, '--runs') ?? 15);
  const warmup = Number(argValue(args, '--warmup') ?? 500);
  const rt = await Runtime.load({ model, slots: 4, threads: 1 });
  // Server work before the first token: from the request's arrival to the runtime call (parsing,
  // validation, tokenizing), paired first in, first out; one row's measured runs at a time.
  const arrivals: number[] = [];
  const admitMicros: number[] = [];
  const served: ServedRuntime = Object.create(rt, {
    complete: {
      value: (o: CompleteOptions) => {
        admitMicros.push((performance.now() - arrivals.shift()!) * 1000);
        return rt.complete(o);
      },
    },
  });
  const server = createServer({ runtime: served, modelId: 'bench', logger: SILENT_LOGGER });
  const { port } = await server.listen({ host: '127.0.0.1', port: 0 });
  server.app.server.prependListener('request', () => arrivals.push(performance.now()));
  const floor = await floorServer(rt);
  const client = new Client();
  // Each path, run once, by its index in PATHS: direct, or the client against one server's port.
  const paths = [
    (streams: number, n: number) => direct(rt, streams, n),
    async (streams: number, n: number) => (await client.run(port, streams, n)).streams,
    async (streams: number, n: number) => (await client.run(floor.port, streams, n)).streams,
  ];
  const rows: string[][] = [];
  const cpuRows: string[][] = [];
  let cold = '';
  try {
    // The first request each path ever serves: JavaScript not yet optimized, caches cold.
    const [coldDirect] = await paths[0]!(1, tokens);
    const [coldServer] = await paths[1]!(1, tokens);
    cold = `first request after start (1 stream): TTFT direct ${coldDirect!.ttft.toFixed(3)} ms, kiln serve ${coldServer!.ttft.toFixed(3)} ms; ` +
      `per token direct ${(coldDirect!.perToken * 1000).toFixed(1)} µs, kiln serve ${(coldServer!.perToken * 1000).toFixed(1)} µs\n`;
    for (const streams of [1, 4]) {
      const timings: StreamTiming[][] = PATHS.map(() => []);
      // The main thread's CPU time per streamed token beyond the direct path's, and its wait for a
      // CPU per token on each path, one figure per run.
      const cpuPerToken: number[] = [];
      const waitDirect: number[] = [];
      const waitServer: number[] = [];
      const clientCpu: number[] = [];
      // Warm-up runs fill the slots' prefix caches and let V8 optimize every path; all but the
      // last 30 generate one token, so many requests go through in little time.
      for (let r = 0; r < warmup; r++) {
        for (const path of paths) await path(streams, r < warmup - 30 ? 1 : tokens);
      }
      admitMicros.length = 0;
      for (let r = 0; r < runs; r++) {
        const a = await timed(() => direct(rt, streams, tokens));
        // The run right after the direct one is slower (by up to 50 µs per token with 4 streams, on
        // the 2-core VM), whichever server it is, so the two servers take turns there.
        if (r % 2 === 1) timings[2]!.push(...(await paths[2]!(streams, tokens)));
        const b = await timed(() => client.run(port, streams, tokens));
        if (r % 2 === 0) timings[2]!.push(...(await paths[2]!(streams, tokens)));
        timings[0]!.push(...a.value);
        timings[1]!.push(...b.value.streams);
        const generated = a.value.reduce((n, x) => n + x.tokens, 0);
        const streamed = b.value.streams.reduce((n, x) => n + x.tokens, 0);
        clientCpu.push(b.value.cpuMicros / streamed);
        cpuPerToken.push(b.time.cpu / streamed - a.time.cpu / generated);
        waitDirect.push(a.time.wait / generated);
        waitServer.push(b.time.wait / streamed);
      }
      const best = (xs: StreamTiming[], k: 'ttft' | 'perToken') => Math.min(...xs.map((x) => x[k]));
      const mid = (xs: StreamTiming[], k: 'ttft' | 'perToken') => median(xs.map((x) => x[k]));
      const ms = (v: number, w: number) => `${v.toFixed(3)} (${w.toFixed(3)})`;
      const us = (v: number, w: number) => `${(v * 1000).toFixed(1)} (${(w * 1000).toFixed(1)})`;
      const d = timings[0]!;
      PATHS.forEach((name, i) => {
        const s = timings[i]!;
        rows.push([
          String(streams), name, String(Math.round(median(s.map((x) => x.tokens)))),
          ms(best(s, 'ttft'), mid(s, 'ttft')), i === 0 ? '-' : ms(best(s, 'ttft') - best(d, 'ttft'), mid(s, 'ttft') - mid(d, 'ttft')),
          us(best(s, 'perToken'), mid(s, 'perToken')), i === 0 ? '-' : us(best(s, 'perToken') - best(d, 'perToken'), mid(s, 'perToken') - mid(d, 'perToken')),
        ]);
      });
      const cell = (xs: number[]) => `${Math.min(...xs).toFixed(1)} (${median(xs).toFixed(1)})`;
      const admit = [...admitMicros].sort((a, b) => a - b);
      cpuRows.push([
        String(streams), `${median(admit).toFixed(1)} (${admit[Math.floor(admit.length * 0.9)]!.toFixed(1)})`,
        cell(cpuPerToken), cell(clientCpu), cell(waitDirect), cell(waitServer),
      ]);
    }
  } finally {
    client.close();
    await floor.close();
    await server.close({ graceMs: 1000 });
    await rt.close();
  }
  process.stdout.write(`server overhead vs direct runtime.complete(): ${model}, ${tokens} tokens, fastest (median) of ${runs} runs after ${warmup} warm-up runs\n\n`);
  process.stdout.write(formatTable(
    ['streams', 'path', 'tokens', 'TTFT ms', 'TTFT added ms', 'per-token µs', 'per-token added µs'],
    rows,
  ) + '\n\n');
  process.stdout.write(formatTable(
    ['streams', 'kiln serve: arrival to runtime call µs, median (p90)', 'server CPU per token µs (main thread, request share incl.)', 'client CPU per token µs', 'main thread waits for a CPU per token µs: direct', 'kiln serve'],
    cpuRows,
  ) + '\n');
  process.stdout.write(`\narrival to runtime call: the server's work before the first token (parse, validate, tokenize)\n${cold}`);
  process.stdout.write(`chat chunk encoder alone: ${encoderMicros().toFixed(2)} µs per content token\n`);
}
