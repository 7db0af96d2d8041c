// `npm run bench -- agent [--threads N] [--out DIR] [--force]`: the 10-turn agent conversation of
// the replay acceptance test (test/fixtures/chat/agent-conversation.ts) on a real-size synthetic
// model, with exact replay on and then off: prompt tokens, tokens prefilled and prefill time per
// turn, as a table, an ASCII chart and an SVG chart (DIR/agent-replay.svg), and the prefill saved.
// The model has TinyLlama-1.1B's shape, Q4_0 random weights, and Llama 3's real vocabulary and
// Llama 3.2 chat template; it is written once to DIR (default ~/.cache/kiln-bench) and reused.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GgmlType } from '../src/gguf/ggml-type.js';
import { GgufValueType } from '../src/gguf/types.js';
import type { GgufWriteSpec } from '../src/gguf/writer.js';
import { Runtime } from '../src/index.js';
import { floatToFp16 } from '../src/reference/quantize.js';
import { runAgentConversation, type AgentTurn } from '../test/fixtures/chat/agent-conversation.js';
import { chatTokenizerMetadata } from '../test/fixtures/chat/tiny-chat-model.js';
import { tensorBytes, writeGgufStreaming, type StreamedTensor } from './gguf-stream-writer.js';
import { DEFAULT_MODEL_DIR, SHAPES } from './models.js';

const SHAPE = SHAPES['tinyllama']!;
const TEMPLATE = fileURLToPath(new URL('../../../shared/templates/llama3.2.jinja', import.meta.url));
const FILE_NAME = 'agent-tinyllama-1.1b-llama3-vocab-q4_0.gguf';
// Q4_0 weights d * (q - 8) with q uniform in 0..15: d = 0.005 spreads them over about +-0.04.
const Q4_0_SCALE = floatToFp16(0.005);
const CHUNK_BLOCKS = 1 << 16;

/** Q4_0 blocks with random quants and one scale: written without quantizing, so 1.1B weights take seconds. */
function randomQ4(name: string, cols: number, rows: number, seed: number): StreamedTensor {
  return {
    name,
    dims: [cols, rows],
    type: GgmlType.Q4_0,
    *chunks() {
      const blocks = (cols * rows) / 32;
      const bytes = new Uint8Array(CHUNK_BLOCKS * 18);
      const words = new Uint32Array(bytes.buffer);
      let s = seed >>> 0 || 1;
      for (let done = 0; done < blocks; done += CHUNK_BLOCKS) {
        const n = Math.min(CHUNK_BLOCKS, blocks - done);
        for (let i = 0; i < words.length; i++) {
          s ^= s << 13; s ^= s >>> 17; s ^= s << 5; // xorshift32
          words[i] = s >>> 0;
        }
        for (let b = 0; b < n; b++) {
          bytes[b * 18] = Q4_0_SCALE & 0xff;
          bytes[b * 18 + 1] = Q4_0_SCALE >> 8;
        }
        yield bytes.subarray(0, n * 18);
      }
    },
  };
}

function norm(name: string, n: number): StreamedTensor {
  return { name, dims: [n], type: GgmlType.F32, *chunks() { yield new Uint8Array(new Float32Array(n).fill(1).buffer); } };
}

function ensureModel(dir: string, force: boolean): string {
  const path = join(dir, FILE_NAME);
  if (existsSync(path) && !force) return path;
  mkdirSync(dir, { recursive: true });
  const tokenizer = chatTokenizerMetadata('llama3');
  const vocab = (tokenizer.find((e) => e.key === 'tokenizer.ggml.tokens')!.value as string[]).length;
  const { dim, nLayers, ffnDim, nHeads, nKvHeads } = SHAPE;
  const kvDim = (dim / nHeads) * nKvHeads;
  const a = 'llama';
  const metadata: NonNullable<GgufWriteSpec['metadata']> = [
    { key: 'general.architecture', type: GgufValueType.STRING, value: a },
    { key: 'general.name', type: GgufValueType.STRING, value: 'TinyLlama-1.1B shape, Llama 3 vocabulary (synthetic, kiln agent bench)' },
    { key: 'general.file_type', type: GgufValueType.UINT32, value: 2 },
    { key: `${a}.context_length`, type: GgufValueType.UINT32, value: 4096 },
    { key: `${a}.embedding_length`, type: GgufValueType.UINT32, value: dim },
    { key: `${a}.block_count`, type: GgufValueType.UINT32, value: nLayers },
    { key: `${a}.feed_forward_length`, type: GgufValueType.UINT32, value: ffnDim },
    { key: `${a}.rope.dimension_count`, type: GgufValueType.UINT32, value: dim / nHeads },
    { key: `${a}.attention.head_count`, type: GgufValueType.UINT32, value: nHeads },
    { key: `${a}.attention.head_count_kv`, type: GgufValueType.UINT32, value: nKvHeads },
    { key: `${a}.attention.layer_norm_rms_epsilon`, type: GgufValueType.FLOAT32, value: SHAPE.rmsEps },
    { key: `${a}.rope.freq_base`, type: GgufValueType.FLOAT32, value: SHAPE.ropeBase },
    ...tokenizer,
    { key: 'tokenizer.chat_template', type: GgufValueType.STRING, value: readFileSync(TEMPLATE, 'utf8') },
  ];
  let seed = 0x6b696c6e;
  const q4 = (name: string, cols: number, rows: number) => randomQ4(name, cols, rows, seed++);
  const tensors: StreamedTensor[] = [q4('token_embd.weight', dim, vocab)];
  for (let l = 0; l < nLayers; l++) {
    const p = `blk.${l}`;
    tensors.push(
      norm(`${p}.attn_norm.weight`, dim), q4(`${p}.attn_q.weight`, dim, dim), q4(`${p}.attn_k.weight`, dim, kvDim),
      q4(`${p}.attn_v.weight`, dim, kvDim), q4(`${p}.attn_output.weight`, dim, dim), norm(`${p}.ffn_norm.weight`, dim),
      q4(`${p}.ffn_gate.weight`, dim, ffnDim), q4(`${p}.ffn_up.weight`, dim, ffnDim), q4(`${p}.ffn_down.weight`, ffnDim, dim),
    );
  }
  tensors.push(norm('output_norm.weight', dim), q4('output.weight', dim, vocab));
  const t0 = performance.now();
  writeGgufStreaming(path, metadata, tensors);
  const bytes = tensors.reduce((n, t) => n + tensorBytes(t.type, t.dims), 0);
  process.stderr.write(`wrote ${path} (${(bytes / 1e9).toFixed(2)} GB of weights in ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
  return path;
}

function arg(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function conversation(model: string, replay: boolean, threads: number | undefined): Promise<AgentTurn[]> {
  const rt = await Runtime.load({ model, contextSize: 4096, replay: replay ? {} : false, ...(threads ? { threads } : {}) });
  try {
    const turns = await runAgentConversation(rt, {
      format: 'llama3_json', thinking: false, eog: '<|eot_id|>', replay,
      beforeTurn: (t) => process.stderr.write(`replay ${replay ? 'on' : 'off'}: turn ${t + 1}/10\r`),
    });
    process.stderr.write('\n');
    return turns;
  } finally {
    await rt.close();
  }
}

function table(on: AgentTurn[], off: AgentTurn[]): string {
  const rows = [['turn', 'prompt', 'on: cached', 'on: prefilled', 'on: prefill ms', 'off: cached', 'off: prefilled', 'off: prefill ms']];
  on.forEach((a, i) => {
    const b = off[i]!;
    rows.push([String(a.turn), String(a.promptTokens), String(a.cachedTokens), String(a.prefillTokens), a.prefillMs.toFixed(0),
      String(b.cachedTokens), String(b.prefillTokens), b.prefillMs.toFixed(0)]);
  });
  const sum = (ts: AgentTurn[], f: (t: AgentTurn) => number) => ts.reduce((n, t) => n + f(t), 0);
  rows.push(['total', '', '', String(sum(on, (t) => t.prefillTokens)), sum(on, (t) => t.prefillMs).toFixed(0),
    '', String(sum(off, (t) => t.prefillTokens)), sum(off, (t) => t.prefillMs).toFixed(0)]);
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => '| ' + r.map((cell, c) => cell.padStart(widths[c]!)).join(' | ') + ' |';
  return [line(rows[0]!), '|' + widths.map((w) => '-'.repeat(w + 1) + ':').join('|') + '|', ...rows.slice(1).map(line)].join('\n');
}

// The charts leave out turn 1: its prompt is prefilled whole either way, and it would flatten the rest.
export function asciiChart(on: AgentTurn[], off: AgentTurn[]): string {
  const later = (ts: AgentTurn[]) => ts.slice(1);
  const max = Math.max(...later(off).map((t) => t.prefillTokens), ...later(on).map((t) => t.prefillTokens), 1);
  const bar = (n: number, ch: string) => ch.repeat(Math.max(n > 0 ? 1 : 0, Math.round((n / max) * 50)));
  const out = [`prefilled tokens per turn after the first (# replay on, . replay off; turn 1: ${on[0]!.prefillTokens} both)`];
  later(on).forEach((a, i) => {
    const b = later(off)[i]!;
    out.push(`${String(a.turn).padStart(2)} on  ${bar(a.prefillTokens, '#')} ${a.prefillTokens}`);
    out.push(`   off ${bar(b.prefillTokens, '.')} ${b.prefillTokens}`);
  });
  return out.join('\n');
}

export function svgChart(on: AgentTurn[], off: AgentTurn[]): string {
  const W = 720, H = 360, left = 60, bottom = 40, top = 40;
  const a = on.slice(1);
  const b = off.slice(1);
  const max = Math.max(...b.map((t) => t.prefillTokens), ...a.map((t) => t.prefillTokens), 1);
  const slot = (W - left - 20) / a.length;
  const y = (n: number) => H - bottom - (n / max) * (H - bottom - top);
  const rect = (x: number, t: AgentTurn, fill: string, label: string) =>
    `<rect x="${x.toFixed(1)}" y="${y(t.prefillTokens).toFixed(1)}" width="${(slot * 0.38).toFixed(1)}" height="${(H - bottom - y(t.prefillTokens)).toFixed(1)}" fill="${fill}">` +
    `<title>turn ${t.turn}, replay ${label}: ${t.prefillTokens} tokens prefilled in ${t.prefillMs.toFixed(0)} ms</title></rect>`;
  const bars = a.flatMap((t, i) => {
    const x = left + i * slot;
    return [
      rect(x + slot * 0.1, b[i]!, '#c0392b', 'off'),
      rect(x + slot * 0.52, t, '#27ae60', 'on'),
      `<text x="${(x + slot / 2).toFixed(1)}" y="${H - bottom + 16}" text-anchor="middle">${t.turn}</text>`,
    ];
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">Tokens prefilled per agent turn: replay off (red), on (green)</text>`,
    `<line x1="${left}" y1="${H - bottom}" x2="${W - 20}" y2="${H - bottom}" stroke="black"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${H - bottom}" stroke="black"/>`,
    `<text x="${left - 6}" y="${top + 4}" text-anchor="end">${max}</text>`,
    `<text x="${left - 6}" y="${H - bottom}" text-anchor="end">0</text>`,
    `<text x="${W / 2}" y="${H - 6}" text-anchor="middle">turn (turn 1: ${on[0]!.prefillTokens} tokens either way)</text>`,
    ...bars,
    '</svg>',
  ].join('\n');
}

export async function run(args: string[]): Promise<void> {
  const dir = arg(args, '--out') ?? DEFAULT_MODEL_DIR;
  const threads = arg(args, '--threads') ? Number(arg(args, '--threads')) : undefined;
  const model = ensureModel(dir, args.includes('--force'));
  console.log(`model: ${model} (${(statSync(model).size / 1e9).toFixed(2)} GB), 10-turn agent conversation, forced tool calls`);
  const on = await conversation(model, true, threads);
  const off = await conversation(model, false, threads);
  console.log(table(on, off));
  console.log();
  console.log(asciiChart(on, off));
  const tokens = (ts: AgentTurn[]) => ts.reduce((n, t) => n + t.prefillTokens, 0);
  const ms = (ts: AgentTurn[]) => ts.reduce((n, t) => n + t.prefillMs, 0);
  const savedTokens = tokens(off) - tokens(on);
  console.log(`\nprefill saved by replay: ${savedTokens} tokens (${((savedTokens / tokens(off)) * 100).toFixed(0)}%), ` +
    `${((ms(off) - ms(on)) / 1000).toFixed(2)} s of ${(ms(off) / 1000).toFixed(2)} s`);
  const svg = join(dir, 'agent-replay.svg');
  writeFileSync(svg, svgChart(on, off));
  console.log(`chart: ${svg}`);
}
