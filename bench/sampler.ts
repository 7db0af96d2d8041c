// `npm run bench -- sampler [--vocab 32000,151936] [--tokens 500] [--runs 5]`: microseconds a
// token for the sampler's common chains (what runs between two decode steps), over a vocabulary's
// logits row: a peaked row (a few dozen tokens well above a noisy floor, as a model's next-token
// logits mostly are) and a flat one. Median of `--runs` runs of `--tokens` picks each, the same
// row every pick. A 0.5B model's decode step takes about 7 ms on the machines kiln is measured on,
// so anything near a millisecond here is a visible share of its tokens per second.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Sampler } from '../src/sampling/sampler.js';
import type { SamplingOptions } from '../src/sampling/sampling-options.js';
import { prng } from '../test/helpers/prng.js';
import { argValue, describeMachine, formatTable, machineInfo, median, REPO_ROOT, warnAboutAddon } from './machine.js';

const CHAINS: Array<{ name: string; options: SamplingOptions }> = [
  { name: 'greedy', options: { temperature: 0 } },
  { name: 'greedy, two tokens banned (logit bias)', options: { temperature: 0, logitBias: { 0: -Infinity, 1: -Infinity } } },
  { name: 'greedy, repeat penalty 1.1', options: { temperature: 0, repeatPenalty: 1.1 } },
  { name: 'temperature 1 (the API defaults)', options: { temperature: 1 } },
  { name: 'temperature 0.7', options: { temperature: 0.7 } },
  { name: 'temperature 0.7, top-p 0.95', options: { temperature: 0.7, topP: 0.95 } },
  { name: 'top-k 40, top-p 0.95, min-p 0.05, temp 0.8', options: { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05 } },
  { name: 'min-p 0.05', options: { minP: 0.05 } },
];

function logitsRow(vocab: number, shape: 'peaked' | 'flat'): Float32Array {
  const r = prng(vocab);
  if (shape === 'flat') return Float32Array.from({ length: vocab }, () => (r.next() - 0.5) * 8);
  const x = Float32Array.from({ length: vocab }, () => (r.next() + r.next() + r.next() - 1.5) * 5 - 2);
  for (let k = 0; k < 30; k++) x[Math.floor(r.next() * vocab)] = 10 + r.next() * 8;
  return x;
}

export async function run(args: string[]): Promise<void> {
  const vocabs = (argValue(args, '--vocab') ?? '32000,151936').split(',').map(Number);
  const tokens = Number(argValue(args, '--tokens') ?? 500);
  const runs = Number(argValue(args, '--runs') ?? 5);
  if (vocabs.some((v) => !(Number.isInteger(v) && v > 0)) || !(tokens > 0) || !(runs > 0)) throw new Error('--vocab takes positive integers, --tokens and --runs positive numbers');
  const machine = machineInfo();
  warnAboutAddon(machine);
  console.log(describeMachine(machine));
  console.log(`${tokens} picks a run, median of ${runs} runs; history: the last 64 picks`);
  const results: Array<Record<string, unknown>> = [];
  const table: string[][] = [];
  for (const vocab of vocabs) {
    for (const shape of ['peaked', 'flat'] as const) {
      const row = logitsRow(vocab, shape);
      for (const chain of CHAINS) {
        const sampler = new Sampler({ ...chain.options, seed: 1 });
        const history: number[] = [];
        const pick = () => {
          history.push(sampler.sample(row, history));
          if (history.length > 64) history.shift();
        };
        for (let i = 0; i < 20; i++) pick();
        const perRun: number[] = [];
        for (let r = 0; r < runs; r++) {
          const t0 = performance.now();
          for (let i = 0; i < tokens; i++) pick();
          perRun.push(((performance.now() - t0) * 1000) / tokens);
        }
        const us = median(perRun);
        results.push({ vocab, shape, chain: chain.name, options: chain.options, usPerToken: us, runs: perRun });
        table.push([String(vocab), shape, chain.name, us.toFixed(1)]);
      }
    }
  }
  console.log(formatTable(['vocabulary', 'row', 'chain', 'us a token'], table));
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `sampler-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ machine, tokens, runs, results }, null, 2));
  console.log(`wrote ${file}`);
}
