// `npm run bench -- streamer [--runs N]`: nanoseconds per 4-character token for the tool-call
// streamer on the rows of the streamer issue, median of N runs (default 5): all pushes, and all
// pushes plus finish() (which joins the whole reply and re-parses it to reconcile). A first line
// calibrates the machine: the cost of a loop that only keeps each token and returns one event.
// `npm run bench -- streamer --fuzz N [--seed S]`: N random replies in random chunkings, checked
// against the final parse; reports how many broke an invariant or threw.
import { performance } from 'node:perf_hooks';
import { IncrementalToolCallStreamer } from '../src/tool-calls/index.js';
import type { OpenAITool, ToolCallFormat } from '../src/tool-calls/index.js';
import { prng } from '../test/helpers/prng.js';
import { fuzzOnce } from '../test/unit/tool-calls/fuzz-text.js';

const MB = 1_000_000;

const TOOLS: OpenAITool[] = [
  { type: 'function', function: { name: 'write_file', parameters: { type: 'object', properties: { content: { type: 'string' } } } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
  { type: 'function', function: { name: 'write_json', parameters: { type: 'object', properties: { data: { type: 'object' } } } } },
];

interface Row {
  name: string;
  format: ToolCallFormat;
  text: string;
}

function prose(n: number): string {
  const words = ['the', 'model', 'streams', 'tokens,', 'naïve', 'café', 'and', 'a', 'tool', 'call.', 'Ünïcode', '—', 'x<y', '[1]'];
  const rng = prng(1);
  let s = '';
  while (s.length < n) s += `${rng.pick(words)} `;
  return s.slice(0, n);
}

function rows(): Row[] {
  const value = prose(MB).replace(/["\\]/g, '');
  return [
    { name: '1 MB of prose (hermes)', format: 'hermes', text: prose(MB) },
    { name: '1 MB of prose (mistral)', format: 'mistral', text: prose(MB) },
    { name: '1 MB argument value (hermes)', format: 'hermes', text: `<tool_call>\n{"name": "write_file", "arguments": {"content": "${value}"}}\n</tool_call>` },
    {
      name: '1 MB argument value (qwen3_coder)',
      format: 'qwen3_coder',
      text: `<tool_call>\n<function=write_file>\n<parameter=content>\n${value}\n</parameter>\n</function>\n</tool_call>`,
    },
    {
      name: '1 MB object value (qwen3_coder)',
      format: 'qwen3_coder',
      text: `<tool_call>\n<function=write_json>\n<parameter=data>\n{"lines": [\n${jsonLines(value)}\n]}\n</parameter>\n</function>\n</tool_call>`,
    },
    { name: '1 MB argument value (mistral)', format: 'mistral', text: `[TOOL_CALLS]write_file[ARGS]{"content": "${value}"}` },
    { name: '20k short calls (hermes)', format: 'hermes', text: '<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>\n'.repeat(20_000) },
    { name: '20k short calls (qwen3_coder)', format: 'qwen3_coder', text: '<tool_call>\n<function=search>\n<parameter=q>\nx\n</parameter>\n</function>\n</tool_call>\n'.repeat(20_000) },
    { name: '1 MB of whitespace (llama3_json)', format: 'llama3_json', text: ' \n\t '.repeat(MB / 4) },
    { name: '1 MB of whitespace (hermes)', format: 'hermes', text: ' \n\t '.repeat(MB / 4) },
    { name: '1 MB of [ nesting (hermes arguments)', format: 'hermes', text: `<tool_call>{"name": "search", "arguments": {"q": ${'['.repeat(MB)}` },
    { name: '1 MB of [ (mistral content)', format: 'mistral', text: '['.repeat(MB) },
  ];
}

/** `text` as the elements of a JSON array of 80-character strings, one a line. */
function jsonLines(text: string): string {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += 80) out.push(`  "${text.slice(i, i + 80)}"`);
  return out.join(',\n');
}

/** 4-character tokens, never splitting a surrogate pair. */
function tokens(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    let j = Math.min(i + 4, text.length);
    const c = text.charCodeAt(j - 1);
    if (j < text.length && c >= 0xd800 && c <= 0xdbff) j++;
    out.push(text.slice(i, j));
    i = j;
  }
  return out;
}

/** [push, push + finish, push + finish in CPU time] in ns per token. */
function once(row: Row, toks: string[]): [number, number, number] {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const s = new IncrementalToolCallStreamer({ format: row.format, tools: TOOLS });
  let events = 0;
  for (const t of toks) events += s.push(t).length;
  const t1 = performance.now();
  events += s.finish().length;
  const t2 = performance.now();
  const cpu = process.cpuUsage(c0);
  if (events === 0) throw new Error(`${row.name}: no events`);
  const per = (ms: number) => (ms * 1e6) / toks.length;
  return [per(t1 - t0), per(t2 - t0), per((cpu.user + cpu.system) / 1000)];
}

/** The floor on this machine: keep each token, return one event for it, join at the end. */
function calibrate(toks: string[]): number {
  const t0 = performance.now();
  const kept: string[] = [];
  let events = 0;
  for (const t of toks) {
    kept.push(t);
    events += [{ type: 'content', text: t }].length;
  }
  if (kept.join('').length === 0 || events === 0) throw new Error('calibration');
  return ((performance.now() - t0) * 1e6) / toks.length;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

function bench(runs: number): void {
  const f = (x: number) => x.toFixed(1);
  const all = rows();
  const prose = tokens(all[0]!.text);
  calibrate(prose);
  const base = median(Array.from({ length: runs }, () => calibrate(prose)));
  console.log(`tool-call streamer: ns per 4-character token, median of ${runs} runs (calibration loop: ${f(base)} ns/token)`);
  console.log('CPU time counts this process only, so it holds up better than wall time on a shared machine.');
  console.log('| row | tokens | push + finish | push only | push + finish, CPU time | push + finish min..max |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const row of all) {
    const toks = tokens(row.text);
    once(row, toks); // warm up
    const xs = Array.from({ length: runs }, () => once(row, toks));
    const total = xs.map((x) => x[1]);
    const push = xs.map((x) => x[0]);
    const cpu = xs.map((x) => x[2]);
    const range = `${f(Math.min(...total))}..${f(Math.max(...total))}`;
    console.log(`| ${row.name} | ${toks.length} | ${f(median(total))} | ${f(median(push))} | ${f(median(cpu))} | ${range} |`);
  }
}

function fuzz(n: number, seed: number): void {
  const rng = prng(seed);
  const t0 = performance.now();
  let failures = 0;
  for (let k = 0; k < n; k++) {
    try {
      fuzzOnce(rng);
    } catch (err) {
      failures++;
      if (failures <= 5) console.log(`iteration ${k}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const s = (performance.now() - t0) / 1000;
  console.log(`fuzz: ${n} random chunkings (seed ${seed}) in ${s.toFixed(1)} s: ${failures} failed`);
  if (failures > 0) process.exitCode = 1;
}

function option(args: string[], name: string): string | undefined {
  const k = args.indexOf(name);
  return k >= 0 ? args[k + 1] : undefined;
}

export async function run(args: string[]): Promise<void> {
  const fuzzN = option(args, '--fuzz');
  if (fuzzN !== undefined) {
    fuzz(Number(fuzzN), Number(option(args, '--seed') ?? 1));
    return;
  }
  bench(Number(option(args, '--runs') ?? 5));
}
