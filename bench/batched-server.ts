// `npm run bench -- batched-server [--model tinyllama:q4_0] [--batches 1,2,4,8] [--threads 2] [--runs 1]
// [--long 2000] [--llama-poll P]`: continuous batching as clients see it. N streaming clients (POST /v1/completions,
// the same 128-token prompt ids for both engines, 128 tokens each with end-of-sequence suppressed,
// temperature 0) against `kiln serve --parallel N` and llama.cpp's `llama-server -np N`, both on
// the same file and threads, the engines alternating in one run. Per N: aggregate decode tok/s
// (tokens streamed after every client has its first one, over the time from then to the last
// one's end), time to first token and inter-token latency p50/p99 as the client's socket sees
// them. Then the long-prompt scenario: 4 clients stream and, once they are decoding, a fifth sends
// a --long-token prompt: the 4 clients' worst inter-token gap while it prefills (kiln splits it
// into budget-sized chunks; llama-server into n_batch chunks) and its time to first token.
// --llama-poll passes llama-server's --poll (how hard its idle threads spin, default 50): on a
// machine shared with other work, spinning threads fight for the cores, and `--llama-poll 0`
// shows llama-server without that. Also run at the end of `npm run bench -- batched`.
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer } from '../src/tokenizer/load-tokenizer.js';
import { argValue, describeMachine, formatTable, machineInfo, median } from './machine.js';
import { ensureLlamaTools } from './llama-bench.js';
import { ensureBenchModel, SHAPES } from './models.js';

const REPO_ROOT = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const KILN = join(REPO_ROOT, 'bin', 'kiln.js');
const PROMPT = 128;
const GEN = 128;
/** Per-sequence context: room for the long prompt of the last scenario. */
const SEQ_CTX = 2304;

type Engine = 'kiln' | 'llama';

interface ServerProc { engine: Engine; modelName: string; url: string; child: ChildProcess; exited: Promise<void> }

export interface ClientRow { decode: number; ttft50: number; ttft99: number; itl50: number; itl99: number }

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = values.slice().sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A distinct prompt per client and run (so neither engine reuses a cache), the same for both engines. */
function promptFor(seq: number, run: number, vocab: number, length = PROMPT): number[] {
  return [1, ...Array.from({ length: length - 1 }, (_, i) => ((seq * 7919 + run * 104729 + i * 31) % (vocab - 300)) + 256)];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function get(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? -1));
    });
    req.on('error', () => resolve(-1));
    req.end();
  });
}

/** Starts an engine's server with `slots` sequence slots and waits until /health answers 200. */
async function startServer(engine: Engine, tools: { server: string }, model: string, slots: number, threads: number, poll: string | undefined): Promise<ServerProc> {
  const port = await freePort();
  const args = engine === 'kiln'
    ? [KILN, 'serve', '--model', model, '--port', String(port), '--threads', String(threads), '--parallel', String(slots), '--ctx', String(SEQ_CTX), '--batch', '512']
    : ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-t', String(threads), '-tb', String(threads), '-np', String(slots),
      '-c', String(slots * SEQ_CTX), '-b', '512', '-ub', '512', '--no-webui',
      ...(poll === undefined ? [] : ['--poll', poll])];
  const child = spawn(engine === 'kiln' ? process.execPath : tools.server, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
  let dead = false;
  const exited = new Promise<void>((resolve) => child.on('exit', () => { dead = true; resolve(); }));
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (dead) throw new Error(`${engine} server exited at start: ${err}`);
    if (await get(`${url}/health`) === 200) return { engine, modelName: basename(model, '.gguf'), url, child, exited };
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function stopServer(s: ServerProc): Promise<void> {
  s.child.kill('SIGINT');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 10_000);
  await s.exited;
  clearTimeout(timer);
}

/** One streaming completion: the arrival time of every streamed token (each SSE event with text). */
function stream(s: ServerProc, prompt: number[], maxTokens: number, eos: number): Promise<number[]> {
  // Both engines are asked for exactly maxTokens: kiln by a bias on end-of-sequence, llama-server
  // by its ignore_eos extension (its OpenAI route takes no bias that forbids a token outright).
  const body = JSON.stringify({
    model: s.modelName, prompt, max_tokens: maxTokens, temperature: 0, stream: true,
    ...(s.engine === 'kiln' ? { logit_bias: { [eos]: -100 } } : { ignore_eos: true }),
  });
  const { hostname, port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const times: number[] = [];
    const req = httpRequest({ host: hostname, port, path: '/v1/completions', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d: Buffer) => { text += d.toString(); });
        res.on('end', () => reject(new Error(`${s.engine}: HTTP ${res.statusCode}: ${text.slice(0, 500)}`)));
        return;
      }
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        const now = performance.now();
        buf += d;
        let at: number;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, at);
          buf = buf.slice(at + 2);
          const data = event.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
          if (!data || data === '[DONE]') continue;
          const text = (JSON.parse(data) as { choices?: { text?: string }[] }).choices?.[0]?.text;
          if (text) times.push(now);
        }
      });
      res.on('end', () => resolve(times));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** N clients at once, each a distinct 128-token prompt and 128 tokens. */
async function clients(s: ServerProc, n: number, run: number, vocab: number, eos: number): Promise<ClientRow> {
  const t0 = performance.now();
  const stamps = await Promise.all(Array.from({ length: n }, (_, c) => stream(s, promptFor(c, run, vocab), GEN, eos)));
  const firsts = stamps.map((t) => t[0]! - t0);
  const allFirst = t0 + Math.max(...firsts);
  const end = Math.max(...stamps.map((t) => t[t.length - 1]!));
  const after = stamps.reduce((k, t) => k + t.filter((x) => x > allFirst).length, 0);
  const gaps = stamps.flatMap((t) => t.slice(1).map((x, i) => x - t[i]!));
  return {
    decode: (after * 1000) / (end - allFirst),
    ttft50: percentile(firsts, 50), ttft99: percentile(firsts, 99), itl50: percentile(gaps, 50), itl99: percentile(gaps, 99),
  };
}

interface LongRow { itlBefore: number; worstDuring: number; ttft: number }

/** 4 clients decoding, then a `long`-token prompt arrives (server with 5 slots). */
async function longPrompt(s: ServerProc, long: number, vocab: number, eos: number): Promise<LongRow> {
  const streams = Array.from({ length: 4 }, (_, c) => stream(s, promptFor(c, 77, vocab, 32), 400, eos));
  // Wait until the 4 are decoding: a few tokens each are on the wire.
  await new Promise((r) => setTimeout(r, 3000));
  const arrived = performance.now();
  const longTimes = await stream(s, promptFor(9, 77, vocab, long), 1, eos);
  const done = performance.now();
  const stamps = await Promise.all(streams);
  const gaps = (from: number, to: number) => stamps.flatMap((t) => t.slice(1).flatMap((x, i) => (x > from && x <= to ? [x - t[i]!] : [])));
  const during = gaps(arrived, done);
  return { itlBefore: percentile(gaps(0, arrived), 99), worstDuring: during.length ? Math.max(...during) : NaN, ttft: longTimes[0]! - arrived };
}

export async function serverView(model: string, label: string, threads: number, batches: number[], runs: number, long: number, poll?: string): Promise<void> {
  const tools = ensureLlamaTools(model);
  const tokenizer = loadTokenizer(model);
  const vocab = tokenizer.vocabSize;
  const eos = tokenizer.eosId ?? 2;
  const rows = new Map<string, ClientRow[]>();
  for (let r = 0; r < runs; r++) {
    for (const n of batches) {
      const order: Engine[] = (r + n) % 2 === 0 ? ['kiln', 'llama'] : ['llama', 'kiln'];
      for (const e of order) {
        process.stderr.write(`server view ${label} run ${r + 1}/${runs}: ${n} clients, ${e}\n`);
        const s = await startServer(e, tools, model, n, threads, poll);
        try {
          await stream(s, promptFor(0, 5000 + r, vocab, 16), 4, eos); // warm-up
          const key = `${e}:${n}`;
          rows.set(key, [...(rows.get(key) ?? []), await clients(s, n, r * 16 + n, vocab, eos)]);
        } finally {
          await stopServer(s);
        }
      }
    }
  }
  const med = (e: Engine, n: number, f: (x: ClientRow) => number) => median((rows.get(`${e}:${n}`) ?? []).map(f));
  console.log(`\n${label}${poll === undefined ? '' : `, llama-server --poll ${poll}`}, server view: N streaming clients (POST /v1/completions, prompt ${PROMPT} tokens, ${GEN} streamed each), ` +
    `kiln serve --parallel N vs llama-server -np N, ${threads} threads; medians of ${runs} run(s)`);
  console.log(formatTable(
    ['N', 'kiln decode tok/s', 'llama-server decode tok/s', 'kiln / llama', 'kiln TTFT p50/p99 ms', 'llama TTFT p50/p99 ms', 'kiln ITL p50/p99 ms', 'llama ITL p50/p99 ms'],
    batches.map((n) => {
      const kd = med('kiln', n, (x) => x.decode);
      const ld = med('llama', n, (x) => x.decode);
      const pair = (e: Engine, a: (x: ClientRow) => number, b: (x: ClientRow) => number, digits: number) => `${med(e, n, a).toFixed(digits)} / ${med(e, n, b).toFixed(digits)}`;
      return [String(n), kd.toFixed(1), ld.toFixed(1), `${(kd / ld).toFixed(2)}x`,
        pair('kiln', (x) => x.ttft50, (x) => x.ttft99, 0), pair('llama', (x) => x.ttft50, (x) => x.ttft99, 0),
        pair('kiln', (x) => x.itl50, (x) => x.itl99, 1), pair('llama', (x) => x.itl50, (x) => x.itl99, 1)];
    }),
  ));
  if (long <= 0) return;
  const longRows: string[][] = [];
  for (const e of ['llama', 'kiln'] as Engine[]) {
    process.stderr.write(`server view ${label}: a ${long}-token prompt while 4 stream, ${e}\n`);
    const s = await startServer(e, tools, model, 5, threads, poll);
    try {
      await stream(s, promptFor(0, 6000, vocab, 16), 4, eos);
      const lp = await longPrompt(s, long, vocab, eos);
      longRows.push([e === 'kiln' ? 'kiln serve --parallel 5' : 'llama-server -np 5', lp.itlBefore.toFixed(1), lp.worstDuring.toFixed(1), lp.ttft.toFixed(0)]);
    } finally {
      await stopServer(s);
    }
  }
  console.log(`\n${label}: a ${long}-token prompt arriving while 4 clients stream (step budget / n_batch 512)`);
  console.log(formatTable(['server', 'the 4: ITL p99 before, ms', 'the 4: worst gap while it prefills, ms', 'its TTFT ms'], longRows));
}

export async function run(args: string[]): Promise<void> {
  const threads = Number(argValue(args, '--threads') ?? 2);
  const batches = (argValue(args, '--batches') ?? '1,2,4,8').split(',').map(Number);
  const runs = Number(argValue(args, '--runs') ?? 1);
  const long = Number(argValue(args, '--long') ?? 2000);
  const spec = argValue(args, '--model') ?? 'tinyllama:q4_0';
  const [shapeName, typeName] = spec.split(':') as [string, string];
  const shape = SHAPES[shapeName];
  if (!shape) throw new Error(`unknown model shape '${shapeName}'`);
  console.log(describeMachine(machineInfo()));
  await serverView(ensureBenchModel(shape, typeName), `${shape.title} ${typeName.toUpperCase()}`, threads, batches, runs, long, argValue(args, '--llama-poll'));
}
