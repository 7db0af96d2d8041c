// `npm run bench -- server [--model FILE] [--tokens 128] [--runs 7]`: what the HTTP server adds on
// top of calling the runtime directly, for 1 and 4 concurrent streams: time to first token and
// time per streamed token, measured the way a client sees them. The client runs in a worker
// thread (its own event loop) and streams /v1/completions with node:http (keep-alive); the direct path calls
// runtime.complete() with onToken. Runs alternate direct and server so both see the same cache
// state and machine noise; each cell is the fastest of --runs (on a shared machine, the closest to
// an unloaded one), with the median beside it. Goal (issue 6): under 1 ms added
// to time to first token and under 50 µs added per token. The client's own work runs on the same
// (2-core) machine and counts in the added times, so also printed: the server's synchronous work
// per token, and the chat encoder's cost alone.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type CompleteOptions, Runtime } from '../src/runtime/runtime.js';
import { createServer, SILENT_LOGGER } from '../src/server/create-server.js';
import { OpenAIChatEncoder } from '../src/server/openai-chat-encoder.js';
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

// The client: streams N requests at once and times each token as it arrives.
const CLIENT = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
parentPort.on('message', async ({ url, streams, tokens, prompts }) => {
  const one = (prompt) => new Promise((resolve, reject) => {
    const body = JSON.stringify({ model: 'bench', prompt, max_tokens: tokens, temperature: 0, stream: true });
    const t0 = performance.now();
    const times = [];
    let buf = '';
    const req = http.request(url + '/v1/completions', {
      method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const now = performance.now();
        buf += chunk;
        let i;
        while ((i = buf.indexOf('\\n\\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (frame.startsWith('data: {') && !frame.includes('"text":""')) times.push(now);
        }
      });
      res.on('end', () => resolve({
        ttft: times[0] - t0, perToken: (times[times.length - 1] - times[0]) / Math.max(1, times.length - 1), tokens: times.length,
      }));
    });
    req.on('error', reject);
    req.end(body);
  });
  parentPort.postMessage(await Promise.all(prompts.slice(0, streams).map(one)));
});
`;

async function direct(rt: Runtime, streams: number, tokens: number): Promise<StreamTiming[]> {
  return Promise.all(PROMPTS.slice(0, streams).map(async (prompt) => {
    const times: number[] = [];
    const t0 = performance.now();
    await rt.complete({ prompt, maxTokens: tokens, temperature: 0, onToken: () => void times.push(performance.now()) });
    return { ttft: times[0]! - t0, perToken: (times[times.length - 1]! - times[0]!) / Math.max(1, times.length - 1), tokens: times.length };
  }));
}

function viaServer(worker: Worker, url: string, streams: number, tokens: number): Promise<StreamTiming[]> {
  return new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage({ url, streams, tokens, prompts: PROMPTS });
  });
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

export async function run(args: string[]): Promise<void> {
  const model = argValue(args, '--model') ?? DEFAULT_MODEL;
  const tokens = Number(argValue(args, '--tokens') ?? 128);
  const runs = Number(argValue(args, '--runs') ?? 7);
  const rt = await Runtime.load({ model, slots: 4, threads: 1 });
  // The server's own synchronous work per token: everything its onToken does (encode, frame,
  // write to the socket) while the generation waits.
  const handlerMicros: number[] = [];
  // And before the first token: from the request's arrival to the runtime call (parsing,
  // validation, tokenizing), paired first in, first out.
  const arrivals: number[] = [];
  const admitMicros: number[] = [];
  const served: ServedRuntime = Object.create(rt, {
    complete: {
      value: (o: CompleteOptions) => {
        admitMicros.push((performance.now() - arrivals.shift()!) * 1000);
        return rt.complete({
        ...o,
        onToken: (text) => {
          const t0 = performance.now();
          o.onToken!(text);
          handlerMicros.push((performance.now() - t0) * 1000);
        },
        });
      },
    },
  });
  const server = createServer({ runtime: served, modelId: 'bench', logger: SILENT_LOGGER });
  const { url } = await server.listen({ host: '127.0.0.1', port: 0 });
  server.app.server.prependListener('request', () => arrivals.push(performance.now()));
  const worker = new Worker(CLIENT, { eval: true });
  const rows: string[][] = [];
  try {
    for (const streams of [1, 4]) {
      const d: StreamTiming[] = [];
      const s: StreamTiming[] = [];
      // One warm-up of each path fills the slots' prefix caches and JIT.
      await direct(rt, streams, tokens);
      await viaServer(worker, url, streams, tokens);
      for (let r = 0; r < runs; r++) {
        d.push(...(await direct(rt, streams, tokens)));
        s.push(...(await viaServer(worker, url, streams, tokens)));
      }
      const best = (xs: StreamTiming[], k: 'ttft' | 'perToken') => Math.min(...xs.map((x) => x[k]));
      const mid = (xs: StreamTiming[], k: 'ttft' | 'perToken') => median(xs.map((x) => x[k]));
      const ms = (v: number, w: number) => `${v.toFixed(3)} (${w.toFixed(3)})`;
      const us = (v: number, w: number) => `${(v * 1000).toFixed(1)} (${(w * 1000).toFixed(1)})`;
      rows.push([
        String(streams), String(Math.round(median(s.map((x) => x.tokens)))),
        ms(best(d, 'ttft'), mid(d, 'ttft')), ms(best(s, 'ttft'), mid(s, 'ttft')),
        ms(best(s, 'ttft') - best(d, 'ttft'), mid(s, 'ttft') - mid(d, 'ttft')),
        us(best(d, 'perToken'), mid(d, 'perToken')), us(best(s, 'perToken'), mid(s, 'perToken')),
        us(best(s, 'perToken') - best(d, 'perToken'), mid(s, 'perToken') - mid(d, 'perToken')),
      ]);
    }
  } finally {
    await worker.terminate();
    await server.close({ graceMs: 1000 });
    await rt.close();
  }
  process.stdout.write(`server overhead vs direct runtime.complete(): ${model}, ${tokens} tokens, fastest (median) of ${runs} runs\n\n`);
  process.stdout.write(formatTable(
    ['streams', 'tokens', 'TTFT direct ms', 'TTFT server ms', 'TTFT added ms', 'per-token direct µs', 'per-token server µs', 'per-token added µs'],
    rows,
  ) + '\n');
  const spread = (xs: number[]) => {
    const sorted = xs.sort((a, b) => a - b);
    return `median ${median(sorted).toFixed(1)} µs, p90 ${sorted[Math.floor(sorted.length * 0.9)]!.toFixed(1)} µs (n=${sorted.length})`;
  };
  process.stdout.write(`\nserver work before the runtime call (arrival -> parse -> validate -> tokenize): ${spread(admitMicros)}\n`);
  process.stdout.write(`server work per token (onToken -> encoder -> socket write, synchronous): ${spread(handlerMicros)}\n`);
  process.stdout.write(`chat chunk encoder alone: ${encoderMicros().toFixed(2)} µs per content token\n`);
}
