// `npm run bench -- batched [--model tinyllama:q4_0,...] [--batches 1,2,4,8] [--threads 2] [--runs 2]
// [--no-peer] [--server] [--llama-poll P] [--level avx2]`: continuous batching. For B concurrent sequences (prompt 128 tokens, 128 generated
// each, EOS masked), kiln's aggregate decode tok/s, per-sequence tok/s, time to first token and
// inter-token latency p50/p99, beside llama.cpp's own `llama-batched-bench` (built natively from
// the source node-llama-cpp ships; `-npp 128 -ntg 128 -npl B`, same threads, same file), the
// engines alternating in one run. Then a long prompt arriving while 4 sequences decode: their
// worst inter-token gaps and its time to first token. With --server, the same through HTTP:
// N streaming clients against `kiln serve --parallel N` and `llama-server -np N` (built from the
// same source), same file and prompts, and the long prompt arriving while 4 clients stream.
// --llama-poll passes llama-batched-bench and llama-server their --poll (how hard idle worker
// threads spin, default 50): on a machine shared with other work the spinning threads fight the
// others for the cores (at load 10 on 2 cores: llama-batched-bench 0.7 tok/s at B=1 against kiln's
// 6.6); `--llama-poll 0` lets them sleep. `--level avx2` forces kiln's CPU kernels to their AVX2
// tier and builds the llama.cpp peers for AVX2/FMA/F16C only (their AVX2 tier).
//
// kiln's decode tok/s counts the tokens produced after every sequence has its first token,
// over the time from then to the last one's end: what llama-batched-bench's S_TG measures
// (generation after a joint prefill of all B prompts).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { argValue, describeMachine, formatTable, machineInfo, median, REPO_ROOT } from './machine.js';
import { ensureLlamaTools } from './llama-bench.js';
import { ensureBenchModel, SHAPES } from './models.js';

const PROMPT = 128;
const GEN = 128;

interface KilnRow { b: number; decode: number; ttft50: number; ttft99: number; itl50: number; itl99: number }
interface PeerRow { b: number; decode: number; ttft: number; itl: number }

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = values.slice().sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** A distinct prompt per sequence and run, so no cache is reused. */
function promptFor(seq: number, run: number, vocab: number, length = PROMPT): number[] {
  return [1, ...Array.from({ length: length - 1 }, (_, i) => ((seq * 7919 + run * 104729 + i * 31) % (vocab - 300)) + 256)];
}

type Runtime = import('../src/runtime/runtime.js').Runtime;

async function kilnBatch(rt: Runtime, b: number, run: number, noEog: Record<number, number>): Promise<KilnRow> {
  const vocab = rt.info.hparams.vocabSize;
  const t0 = performance.now();
  const firsts: number[] = [];
  const ends: number[] = [];
  const stamps: number[][] = [];
  await Promise.all(Array.from({ length: b }, async (_, s) => {
    const times: number[] = [];
    stamps.push(times);
    await rt.complete({
      prompt: promptFor(s, run, vocab), maxTokens: GEN, temperature: 0, logitBias: noEog,
      logprobs: 0, onLogprob: () => times.push(performance.now()),
    });
    firsts.push(times[0]! - t0);
    ends.push(performance.now());
  }));
  const allFirst = t0 + Math.max(...firsts);
  const end = Math.max(...ends);
  const after = stamps.reduce((n, t) => n + t.filter((x) => x > allFirst).length, 0);
  const gaps = stamps.flatMap((t) => t.slice(1).map((x, i) => x - t[i]!));
  return {
    b, decode: (after * 1000) / (end - allFirst),
    ttft50: percentile(firsts, 50), ttft99: percentile(firsts, 99), itl50: percentile(gaps, 50), itl99: percentile(gaps, 99),
  };
}

function peerBatch(binary: string, model: string, b: number, threads: number, poll: string | undefined): PeerRow {
  const r = spawnSync(binary, ['-m', model, '-t', String(threads), '-tb', String(threads), '-c', String(b * (PROMPT + GEN) + 64), '-b', '512', '-ub', '512',
    '-npp', String(PROMPT), '-ntg', String(GEN), '-npl', String(b), ...(poll === undefined ? [] : ['--poll', poll])], { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`llama-batched-bench failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout).slice(-2000)}`);
  // |    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
  const line = (r.stdout + r.stderr).split('\n').find((l) => new RegExp(`^\\|\\s*${PROMPT}\\s*\\|\\s*${GEN}\\s*\\|\\s*${b}\\s*\\|`).test(l));
  if (!line) throw new Error(`no result row in llama-batched-bench's output:\n${r.stdout.slice(-2000)}`);
  const cells = line.split('|').map((c) => c.trim()).filter((c) => c.length > 0).map(Number);
  const [, , , , tPp, , tTg, sTg] = cells as [number, number, number, number, number, number, number, number];
  return { b, decode: sTg, ttft: tPp * 1000, itl: (tTg * 1000) / GEN };
}

/** 4 sequences decoding, then a prompt of `long` tokens arrives: their worst gaps, and its TTFT. */
async function kilnLongPrompt(rt: Runtime, long: number, noEog: Record<number, number>): Promise<{ gapBefore: number; gapDuring: number; ttft: number; step: number }> {
  const vocab = rt.info.hparams.vocabSize;
  const stamps: number[][] = [];
  let arrived = 0;
  let firstOfLong = 0;
  const streams = Array.from({ length: 4 }, async (_, s) => {
    const times: number[] = [];
    stamps.push(times);
    await rt.complete({ prompt: promptFor(s, 99, vocab, 32), maxTokens: 200, temperature: 0, logitBias: noEog, logprobs: 0, onLogprob: () => times.push(performance.now()) });
  });
  // The long prompt arrives once all 4 decode (a fixed wait was too short at load 10: it came
  // while they still prefilled, leaving no gaps "before" to compare with).
  while (stamps.length < 4 || !stamps.every((t) => t.length >= 8)) await new Promise((r) => setTimeout(r, 20));
  arrived = performance.now();
  await rt.complete({ prompt: promptFor(9, 99, vocab, long), maxTokens: 1, temperature: 0, logitBias: noEog, logprobs: 0, onLogprob: () => (firstOfLong = performance.now()) });
  const done = performance.now();
  await Promise.all(streams);
  const gaps = (from: number, to: number) => stamps.flatMap((t) => t.slice(1).flatMap((x, i) => (x > from && x <= to ? [x - t[i]!] : [])));
  const before = gaps(0, arrived);
  return { gapBefore: percentile(before, 99), gapDuring: Math.max(...gaps(arrived, done)), ttft: firstOfLong - arrived, step: median(before) };
}

const KILN_CLI = join(REPO_ROOT, 'bin', 'kiln.js');

interface HttpServer { url: string; child: ChildProcess }

/** Starts a server child and waits until its /health answers 200. */
async function startHttp(cmd: string, args: string[], port: number): Promise<HttpServer> {
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-4000); });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`${cmd} exited (${child.exitCode}): ${err}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return { url, child };
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGKILL');
  throw new Error(`${cmd} did not become healthy: ${err}`);
}

async function stopHttp(s: HttpServer): Promise<void> {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  if (s.child.exitCode === null) s.child.kill('SIGKILL');
}

/** One streaming /v1/completions request on token ids, the end-of-sequence token masked: each data frame's arrival time. */
async function streamTimes(url: string, prompt: number[], maxTokens: number): Promise<number[]> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, stream: true, logit_bias: { 2: -100 } }),
  });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  const times: number[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let at: number;
    while ((at = buffered.indexOf('\n\n')) >= 0) {
      const frame = buffered.slice(0, at);
      buffered = buffered.slice(at + 2);
      if (frame.startsWith('data: {') && frame.includes('"text"')) times.push(performance.now());
    }
  }
  return times;
}

interface ServerRow { n: number; aggregate: number; ttft50: number; itl50: number; itl99: number }

async function serverClients(url: string, n: number, run: number, vocab: number): Promise<ServerRow> {
  const t0 = performance.now();
  const all = await Promise.all(Array.from({ length: n }, (_, s) => streamTimes(url, promptFor(s, 500 + run, vocab), GEN)));
  const end = Math.max(...all.map((t) => t[t.length - 1]!));
  const tokens = all.reduce((k, t) => k + t.length, 0);
  const gaps = all.flatMap((t) => t.slice(1).map((x, i) => x - t[i]!));
  return { n, aggregate: (tokens * 1000) / (end - t0), ttft50: percentile(all.map((t) => t[0]! - t0), 50), itl50: percentile(gaps, 50), itl99: percentile(gaps, 99) };
}

/** 4 clients streaming, then a 2000-token prompt: the 4's gap p99 while it prefills, and its TTFT. */
async function serverLongPrompt(url: string, vocab: number): Promise<{ gap99: number; gapMax: number; ttft: number }> {
  const streams = Array.from({ length: 4 }, (_, s) => streamTimes(url, promptFor(s, 900, vocab, 32), 160));
  await new Promise((r) => setTimeout(r, 2000));
  const arrived = performance.now();
  const long = await streamTimes(url, promptFor(7, 900, vocab, 2000), 1);
  const done = performance.now();
  const times = await Promise.all(streams);
  const during = times.flatMap((t) => t.slice(1).flatMap((x, i) => (x > arrived && x <= done ? [x - t[i]!] : [])));
  return { gap99: percentile(during, 99), gapMax: Math.max(...during), ttft: long[0]! - arrived };
}

async function serverView(model: string, threads: number, runs: number, llamaServer: string | null, vocab: number, label: string, llamaPoll?: string): Promise<void> {
  const engines: Array<{ name: string; start: (n: number) => Promise<HttpServer> }> = [
    { name: 'kiln serve', start: (n) => startHttp(process.execPath, [KILN_CLI, 'serve', '--model', model, '--model-name', 'bench', '--parallel', String(n), '--threads', String(threads), '--ctx', '2304', '--port', '18480'], 18480) },
  ];
  if (llamaServer) {
    engines.push({ name: 'llama-server', start: (n) => startHttp(llamaServer, ['-m', model, '-t', String(threads), '-tb', String(threads), '-np', String(n), '-c', String(n * 2304), '-b', '512', '-ub', '512', '--port', '18481', '--host', '127.0.0.1',
      ...(llamaPoll === undefined ? [] : ['--poll', llamaPoll])], 18481) });
  }
  const rows: string[][] = [];
  for (const n of [1, 4]) {
    const results = new Map<string, ServerRow[]>();
    for (let r = 0; r < runs; r++) {
      for (const e of r % 2 === 0 ? engines : [...engines].reverse()) {
        const s = await e.start(n);
        try {
          await serverClients(s.url, 1, 9000 + r, vocab); // warm-up
          results.set(e.name, [...(results.get(e.name) ?? []), await serverClients(s.url, n, r, vocab)]);
        } finally {
          await stopHttp(s);
        }
      }
    }
    for (const e of engines) {
      const rs = results.get(e.name)!;
      rows.push([String(n), e.name, median(rs.map((x) => x.aggregate)).toFixed(1), median(rs.map((x) => x.ttft50)).toFixed(0), `${median(rs.map((x) => x.itl50)).toFixed(1)} / ${median(rs.map((x) => x.itl99)).toFixed(1)}`]);
    }
  }
  console.log(`\nServer view, ${label}: N streaming clients (prompt ${PROMPT} token ids, ${GEN} tokens each), medians of ${runs} runs`);
  console.log(formatTable(['N', 'server', 'tok/s, all clients', 'TTFT p50 ms', 'ITL p50 / p99 ms'], rows));
  const long: string[][] = [];
  for (const e of engines) {
    const s = await e.start(5);
    try {
      await serverClients(s.url, 1, 9100, vocab);
      const lp = await serverLongPrompt(s.url, vocab);
      long.push([e.name, lp.gap99.toFixed(0), lp.gapMax.toFixed(0), lp.ttft.toFixed(0)]);
    } finally {
      await stopHttp(s);
    }
  }
  console.log('A 2000-token prompt arriving while 4 clients stream (5 slots):');
  console.log(formatTable(['server', 'their gap p99 while it prefills, ms', 'worst gap ms', 'its TTFT ms'], long));
}

export async function run(args: string[]): Promise<void> {
  const threads = Number(argValue(args, '--threads') ?? 2);
  const batches = (argValue(args, '--batches') ?? '1,2,4,8').split(',').map(Number);
  const runs = Number(argValue(args, '--runs') ?? 2);
  const peer = !args.includes('--no-peer');
  const server = args.includes('--server');
  const models = (argValue(args, '--model') ?? 'tinyllama:q4_0,tinyllama:q8_0,tinyllama:q4_k').split(',');
  const avx2 = argValue(args, '--level') === 'avx2';
  const { Runtime } = await import('../src/index.js');
  const { native } = await import('../src/native/binding.js');
  native().setKernelLevel(avx2 ? 'avx2' : 'best');
  console.log(describeMachine(machineInfo()));
  if (avx2) console.log('kiln kernels forced to the AVX2 tier; llama.cpp built for AVX2/FMA/F16C only');
  for (const spec of models) {
    const [shapeName, typeName] = spec.split(':') as [string, string];
    const shape = SHAPES[shapeName];
    if (!shape) throw new Error(`unknown model shape '${shapeName}'`);
    const model = ensureBenchModel(shape, typeName);
    const tools = peer ? ensureLlamaTools(model, undefined, avx2) : null;
    const rt = await Runtime.load({ model, threads, slots: Math.max(...batches, 4), maxBatch: 512, contextSize: 2048 });
    const noEog: Record<number, number> = {};
    for (let id = 0; id < rt.info.hparams.vocabSize; id++) if (rt.tokenizer.isEog(id)) noEog[id] = -Infinity;
    try {
      await kilnBatch(rt, 1, 1000, noEog); // warm-up
      const kiln = new Map<number, KilnRow[]>();
      const llama = new Map<number, PeerRow[]>();
      for (let r = 0; r < runs; r++) {
        for (const b of batches) {
          process.stderr.write(`${spec} run ${r + 1}/${runs}: B=${b}\n`);
          // Alternate which engine goes first.
          const order = r % 2 === 0 ? ['kiln', 'peer'] : ['peer', 'kiln'];
          for (const e of order) {
            if (e === 'kiln') kiln.set(b, [...(kiln.get(b) ?? []), await kilnBatch(rt, b, r * 16 + b, noEog)]);
            else if (tools) llama.set(b, [...(llama.get(b) ?? []), peerBatch(tools.batchedBench, model, b, threads, argValue(args, '--llama-poll'))]);
          }
        }
      }
      const med = <T>(rows: T[] | undefined, f: (r: T) => number) => (rows && rows.length ? median(rows.map(f)) : NaN);
      const b1 = med(kiln.get(1), (r) => r.decode);
      console.log(`\n${shape.title} ${typeName.toUpperCase()}, ${threads} threads, prompt ${PROMPT}, ${GEN} generated per sequence; medians of ${runs} runs`);
      console.log(formatTable(
        ['B', 'kiln decode tok/s', 'per sequence', 'x kiln B=1', 'llama-batched-bench S_TG', 'kiln / llama', 'kiln TTFT p50/p99 ms', 'llama T_PP ms', 'kiln ITL p50/p99 ms', 'llama ITL ms'],
        batches.map((b) => {
          const k = kiln.get(b);
          const l = llama.get(b);
          const kd = med(k, (r) => r.decode);
          const ld = med(l, (r) => r.decode);
          return [String(b), kd.toFixed(1), (kd / b).toFixed(1), (kd / b1).toFixed(2), Number.isNaN(ld) ? '-' : ld.toFixed(1), Number.isNaN(ld) ? '-' : `${(kd / ld).toFixed(2)}x`,
            `${med(k, (r) => r.ttft50).toFixed(0)} / ${med(k, (r) => r.ttft99).toFixed(0)}`, Number.isNaN(ld) ? '-' : med(l, (r) => r.ttft).toFixed(0),
            `${med(k, (r) => r.itl50).toFixed(1)} / ${med(k, (r) => r.itl99).toFixed(1)}`, Number.isNaN(ld) ? '-' : med(l, (r) => r.itl).toFixed(1)];
        }),
      ));
      const lp = await kilnLongPrompt(rt, 2000, noEog);
      console.log(`A 2000-token prompt while 4 sequences decode: their inter-token gap p99 before ${lp.gapBefore.toFixed(1)} ms (median ${lp.step.toFixed(1)}), worst while it prefills ${lp.gapDuring.toFixed(1)} ms; its time to first token ${lp.ttft.toFixed(0)} ms`);
    } finally {
      await rt.close();
    }
    if (server && avx2) console.log('The server view is left out with --level avx2: `kiln serve` runs its best tier.');
    else if (server) await serverView(model, threads, runs, tools?.server ?? null, shape.vocab, `${shape.title} ${typeName.toUpperCase()}`, argValue(args, '--llama-poll'));
  }
}
