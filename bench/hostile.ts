// `npm run bench -- hostile [--model FILE] [--chat-template FILE] [--ctx N] [--only a,b]`: the floods
// and attacks of issue 15 against a running `kiln serve` (the real CLI in a child process), each
// while two clients stream completions and a third polls /health. Per attack: what the server
// answered, its memory peak above where it started, the worst /health latency and the worst gap
// between two streamed tokens (next to the streams' median gap, what decoding itself takes).
// Goal (issue 15): every attack survived, memory under 1 GiB above the model, no stream stalled
// more than 100 ms. Hostile chat templates run on servers of their own (one is refused at start).
// The bystanders run on a worker thread of their own: the attacker building a 7 MB body holds
// this thread's event loop, and would otherwise show up as the server's stall.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { loadTokenizer } from '../src/tokenizer/load-tokenizer.js';
import { argValue, formatTable, median, REPO_ROOT } from './machine.js';

const SHARED = process.env.KILN_SHARED ?? join(REPO_ROOT, '..', 'shared');
const KILN = join(REPO_ROOT, 'bin', 'kiln.js');

interface Server { url: string; pid: number; child: ChildProcess; exited: Promise<number | null> }

function startServer(args: string[]): Promise<Server> {
  const child = spawn(process.execPath, [KILN, 'serve', '--port', '0', '--threads', '1', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /serving '[^']+' at (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1]!, pid: child.pid!, child, exited });
    });
    void exited.then((code) => reject(new Error(`kiln serve exited (${code}): ${err.slice(-2000)}`)));
  });
}

interface Reply { status: number; bytes: number }

function send(url: string, path: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }, method = 'POST'): Promise<Reply> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const req = httpRequest({ host: hostname, port, path, method, headers }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => { bytes += d.length; });
      res.on('end', () => resolve({ status: res.statusCode!, bytes }));
      res.on('error', () => resolve({ status: -1, bytes }));
    });
    req.on('error', () => resolve({ status: -1, bytes: 0 }));
    req.end(body);
  });
}

/** What the server's process takes, sampled every 20 ms. */
class RssSampler {
  peak = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly pid: number) {
    this.timer = setInterval(() => this.sample(), 20);
  }
  sample(): number {
    try {
      const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${this.pid}/status`, 'utf8'))?.[1] ?? 0);
      this.peak = Math.max(this.peak, kb * 1024);
      return kb * 1024;
    } catch {
      return 0;
    }
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

interface BystanderReport { gaps: number[]; worstHealthMs: number; healthFailures: number; streamFailures: number }

/** Two streaming clients and a /health poller, recording the worst gaps while an attack runs (on the bystander thread). */
class Bystanders {
  private running = true;
  gaps: number[] = [];
  worstHealthMs = 0;
  healthFailures = 0;
  streamFailures = 0;
  private readonly done: Promise<void>[];
  private readonly agent = new Agent({ keepAlive: true });

  constructor(private readonly url: string) {
    this.done = [this.stream(), this.stream(), this.health()];
  }

  private async stream(): Promise<void> {
    const { hostname, port } = new URL(this.url);
    const body = JSON.stringify({ model: 'bench', prompt: 'Once upon a time', max_tokens: 48, temperature: 0, stream: true });
    while (this.running) {
      await new Promise<void>((resolve) => {
        const req = httpRequest({ host: hostname, port, path: '/v1/completions', method: 'POST', agent: this.agent, headers: { 'content-type': 'application/json' } }, (res) => {
          if (res.statusCode !== 200) this.streamFailures++;
          let last = -1;
          res.on('data', () => {
            const now = performance.now();
            if (last >= 0) this.gaps.push(now - last);
            last = now;
          });
          res.on('end', resolve);
          res.on('error', () => { this.streamFailures++; resolve(); });
        });
        req.on('error', () => { this.streamFailures++; resolve(); });
        req.end(body);
      });
    }
  }

  private async health(): Promise<void> {
    const { hostname, port } = new URL(this.url);
    while (this.running) {
      const t0 = performance.now();
      const ok = await new Promise<boolean>((resolve) => {
        const req = httpRequest({ host: hostname, port, path: '/health', agent: this.agent, timeout: 10_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
        });
        req.on('error', () => resolve(false));
        req.on('timeout', () => { req.destroy(); resolve(false); });
        req.end();
      });
      this.worstHealthMs = Math.max(this.worstHealthMs, performance.now() - t0);
      if (!ok) this.healthFailures++;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<BystanderReport> {
    this.running = false;
    await Promise.all(this.done);
    this.agent.destroy();
    return { gaps: this.gaps, worstHealthMs: this.worstHealthMs, healthFailures: this.healthFailures, streamFailures: this.streamFailures };
  }
}

if (!isMainThread && (workerData as { bystandersOf?: string } | null)?.bystandersOf !== undefined) {
  const bystanders = new Bystanders((workerData as { bystandersOf: string }).bystandersOf);
  parentPort!.once('message', () => void bystanders.stop().then((report) => parentPort!.postMessage(report)));
}

/** Starts the bystanders on a thread of their own; stop() gives what they saw. */
function startBystanders(url: string): { stop(): Promise<BystanderReport> } {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { bystandersOf: url } });
  return {
    stop: () => new Promise<BystanderReport>((resolve, reject) => {
      worker.once('message', (report: BystanderReport) => void worker.terminate().then(() => resolve(report)));
      worker.once('error', reject);
      worker.postMessage('stop');
    }),
  };
}

interface Attack {
  name: string;
  what: string;
  run(url: string): Promise<Reply[]>;
}

const model = (extra: object) => JSON.stringify({ model: 'bench', max_tokens: 4, ...extra });
const sequential = async (n: number, f: (i: number) => Promise<Reply>): Promise<Reply[]> => {
  const out: Reply[] = [];
  for (let i = 0; i < n; i++) out.push(await f(i));
  return out;
};
/** A word of `n` letters that no other `i` gives. */
const letters = (i: number, n: number) => {
  const tag = i.toString(26).split('').map((d) => String.fromCharCode(97 + parseInt(d, 26))).join('');
  return 'qwertyuiopasdfghjklzxcvbnm'.repeat(Math.ceil(n / 26)).slice(0, n - tag.length) + tag;
};

function attacks(ctxChars: number): Attack[] {
  return [
    {
      name: 'word-cache', what: '650 prompts of 6.6 MB, each one new long word',
      run: (url) => sequential(650, (i) => send(url, '/v1/completions', model({ prompt: `${letters(i, 6_600_000)}${i}` }))),
    },
    {
      name: 'big-prompts', what: `60 prompts of ${ctxChars} characters (as long as the context lets through), 4 at a time`,
      run: async (url) => (await Promise.all(Array.from({ length: 4 }, (_, k) => sequential(15, (i) => send(url, '/v1/completions', model({ prompt: `${letters(k * 100 + i, ctxChars - 10)} end` })))))).flat(),
    },
    {
      name: 'one-word', what: 'a 7 MB one-word prompt, 20 times',
      run: (url) => sequential(20, (i) => send(url, '/v1/completions', model({ prompt: 'z'.repeat(7_000_000) + i }))),
    },
    {
      name: 'responses-store', what: '612 Responses requests of 7 MB (metadata), then 300 stored ones as long as the context lets through',
      run: async (url) => [
        ...await sequential(612, (i) => send(url, '/v1/responses', model({ input: 'hi', metadata: { k: 'v'.repeat(7_000_000 + i) } }))),
        ...await sequential(300, (i) => send(url, '/v1/responses', JSON.stringify({ model: 'bench', max_output_tokens: 1, input: `${'word '.repeat(Math.floor(ctxChars / 40))}${i}` }))),
      ],
    },
    {
      name: 'cross-site', what: '200 text/plain POSTs from a foreign Origin with Host evil.example',
      run: (url) => sequential(200, () => send(url, '/v1/completions', model({ prompt: 'hi' }), { 'content-type': 'text/plain', origin: 'https://evil.example', host: 'evil.example' })),
    },
    {
      name: 'slow-bodies', what: '236 connections trickling a body for 20 s, then 50 requests',
      run: async (url) => {
        const { hostname, port } = new URL(url);
        const sockets = Array.from({ length: 236 }, () => {
          const s = connect(Number(port), hostname);
          s.on('error', () => {});
          s.write(`POST /v1/completions HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`);
          return s;
        });
        const timer = setInterval(() => { for (const s of sockets) if (s.writable) s.write(' '); }, 1000);
        await new Promise((r) => setTimeout(r, 20_000));
        const replies = await sequential(50, () => send(url, '/v1/completions', model({ prompt: 'hi' })));
        clearInterval(timer);
        for (const s of sockets) s.destroy();
        return replies;
      },
    },
    {
      name: 'deep-json', what: 'JSON 5,000 deep in tool_use.input and 100,000 deep in metadata, 50 each',
      run: async (url) => [
        ...await sequential(50, () => send(url, '/v1/messages', `{"model":"bench","max_tokens":4,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`)),
        ...await sequential(50, () => send(url, '/v1/responses', `{"model":"bench","input":"hi","metadata":{"k":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`)),
      ],
    },
    {
      name: 'many-messages', what: '1 MB of spaces as a prompt, and 10,000 short messages, 10 each',
      run: async (url) => [
        ...await sequential(10, () => send(url, '/v1/completions', model({ prompt: ' '.repeat(1 << 20) }))),
        ...await sequential(10, () => send(url, '/v1/chat/completions', model({ messages: Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' })) }))),
      ],
    },
    {
      name: 'echo', what: 'a 7 MB model name, 50 times (the 404 body stays small)',
      run: (url) => sequential(50, () => send(url, '/v1/chat/completions', JSON.stringify({ model: 'm'.repeat(7_000_000), messages: [{ role: 'user', content: 'hi' }] }))),
    },
  ];
}

/** Templates a model file could carry: each must be refused at start or held to its limits. */
const HOSTILE_TEMPLATES: Array<{ name: string; source: string; messages: number }> = [
  { name: 'template-loops', source: '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}', messages: 1 },
  { name: 'template-late-loops', source: '{% if messages|length > 2 %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{% endif %}{{ messages[-1].content }}', messages: 3 },
  { name: 'template-replace', source: "{% if messages|length > 2 %}{% set ns = namespace(s='a') %}{% for i in range(26) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s.replace('a', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}{% endif %}{{ messages[-1].content }}", messages: 3 },
  { name: 'template-2^28', source: "{% if messages|length > 2 %}{% set ns = namespace(s='a') %}{% for i in range(28) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}{% endif %}{{ messages[-1].content }}", messages: 3 },
];

interface Row { attack: string; replies: string; rss: string; health: string; gap: string; alive: string }

async function measure(server: Server, name: string, work: () => Promise<Reply[]>): Promise<Row> {
  const rss = new RssSampler(server.pid);
  const start = rss.sample();
  const observer = startBystanders(server.url);
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const replies = await work();
  const seconds = (performance.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, 300));
  const bystanders = await observer.stop();
  rss.stop();
  const counts = new Map<number, number>();
  for (const r of replies) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  const alive = (await send(server.url, '/health', '', {}, 'GET')).status === 200;
  const gaps = bystanders.gaps;
  return {
    attack: name,
    replies: `${[...counts].map(([s, n]) => `${n}x${s === -1 ? 'reset' : s}`).join(' ')} in ${seconds.toFixed(1)} s`,
    rss: `${((rss.peak - start) / 2 ** 20).toFixed(0)} MiB`,
    health: `${bystanders.worstHealthMs.toFixed(0)} ms${bystanders.healthFailures ? ` (${bystanders.healthFailures} failed)` : ''}`,
    gap: gaps.length === 0 ? 'no tokens' : `${Math.max(...gaps).toFixed(0)} ms (median ${median(gaps).toFixed(1)})${bystanders.streamFailures ? `, ${bystanders.streamFailures} failed` : ''}`,
    alive: alive && server.child.exitCode === null ? 'yes' : 'NO',
  };
}

export async function run(args: string[]): Promise<void> {
  const modelPath = argValue(args, '--model') ?? join(SHARED, 'models', 'tiny-qwen3-q8_0.gguf');
  const template = argValue(args, '--chat-template') ?? join(SHARED, 'templates', 'qwen3.jinja');
  const ctx = Number(argValue(args, '--ctx') ?? 8192);
  const only = argValue(args, '--only')?.split(',') ?? null;
  const base = ['--model', modelPath, '--model-name', 'bench', '--ctx', String(ctx), '--parallel', '2'];
  const rows: Row[] = [];
  const server = await startServer([...base, '--chat-template', template]);
  try {
    // The characters a prompt may have before it is refused unread: the context times the longest token.
    const maxTokenChars = loadTokenizer(modelPath).maxTokenChars;
    process.stderr.write(`kiln serve on ${modelPath}, context ${ctx}, longest token ${maxTokenChars} characters\n`);
    for (const a of attacks(ctx * maxTokenChars)) {
      if (only !== null && !only.includes(a.name)) continue;
      process.stderr.write(`${a.name}: ${a.what}\n`);
      rows.push(await measure(server, a.name, () => a.run(server.url)));
    }
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kiln-hostile-'));
  for (const t of HOSTILE_TEMPLATES) {
    if (only !== null && !only.includes(t.name)) continue;
    const file = join(dir, `${t.name}.jinja`);
    writeFileSync(file, t.source);
    process.stderr.write(`${t.name}: a server with this chat template, then 20 chats of ${t.messages} messages\n`);
    const t0 = performance.now();
    let s: Server;
    try {
      s = await startServer([...base, '--chat-template', file]);
    } catch (e) {
      rows.push({ attack: t.name, replies: `refused at start in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${/chat template[^\n]*/.exec((e as Error).message)?.[0]?.slice(0, 80) ?? (e as Error).message.slice(0, 80)}`, rss: '-', health: '-', gap: '-', alive: 'n/a' });
      continue;
    }
    try {
      const body = model({ messages: Array.from({ length: t.messages }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' })) });
      rows.push(await measure(s, t.name, () => sequential(20, () => send(s.url, '/v1/chat/completions', body))));
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
    }
  }
  console.log(formatTable(['attack', 'answers', 'memory peak above start', '/health worst', 'worst token gap', 'alive'],
    rows.map((r) => [r.attack, r.replies, r.rss, r.health, r.gap, r.alive])));
}
