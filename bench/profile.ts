// `npm run bench -- profile [--model FILE|SHAPE:TYPE] [--level best|avx2] [--threads N] [--prompt 512]
//   [--generate 128] [--kv f16|f32] [--models-dir DIR]`:
// where kiln's time goes in the e2e bench's three phases (a 512-token prefill, decode at depth 0
// and at depth 512), op by op, in one process on the CPU backend. Every layer's op of one kind
// shares a row: a product by its weights' names and type ("mul_mat attn_q+attn_k+attn_v q4_0"),
// with the GB/s at which it read them and its GFLOP/s; "step, between ops" is the step's own checks and copies,
// "outside the steps" what runs between two native steps (sampling, the scheduler, JS). Each phase
// is run once after a warm-up, with the read bandwidth probed just before it for the products'
// GB/s to stand against. Output: the tables, and bench/results/profile-<time>.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, type OpProfile } from '../src/native/binding.js';
import { request, resolveModel } from './e2e.js';
import { loadKiln } from './e2e-engine.js';
import { argValue, describeMachine, formatTable, machineInfo, measureLimits, probeReadNow, REPO_ROOT, warnAboutAddon } from './machine.js';
import { DEFAULT_MODEL_DIR } from './models.js';

interface Phase {
  name: string;
  tokens: number;
  wallSeconds: number;
  readGBs: number;
  profile: OpProfile;
}

export async function run(args: string[]): Promise<void> {
  const threads = Number(argValue(args, '--threads') ?? 2);
  const promptTokens = Number(argValue(args, '--prompt') ?? 512);
  const generate = Number(argValue(args, '--generate') ?? 128);
  const kvCacheType = (argValue(args, '--kv') ?? 'f16') as 'f16' | 'f32';
  const level = argValue(args, '--level') ?? 'best';
  if (level !== 'best' && level !== 'avx2') throw new Error(`--level takes best or avx2, got '${level}'`);
  const { name, file } = resolveModel(argValue(args, '--model') ?? 'tinyllama:q4_0', argValue(args, '--models-dir') ?? DEFAULT_MODEL_DIR);

  const machine = machineInfo();
  warnAboutAddon(machine);
  const limits = await measureLimits(threads, 1);
  console.log(describeMachine(machine, limits));
  console.log(`${name}, kiln cpu${level === 'avx2' ? ' (kernels forced to the AVX2 tier)' : ''}, ${threads} threads, KV cache ${kvCacheType}`);

  const addon = native();
  const { rt, logitBias } = await loadKiln({ model: file, backend: 'cpu', level, threads, contextSize: promptTokens + generate + 16, batch: promptTokens, kvCacheType });
  const vocab = rt.info.hparams.vocabSize;
  const complete = (prompt: number[], maxTokens: number) => rt.complete({ prompt, maxTokens, temperature: 0, logitBias });

  const phases: Phase[] = [];
  const measure = async (phaseName: string, tokens: number, fn: () => Promise<void>) => {
    const readGBs = await probeReadNow(threads);
    addon.setOpProfiling(true);
    const t0 = performance.now();
    await fn();
    const wallSeconds = (performance.now() - t0) / 1000;
    phases.push({ name: phaseName, tokens, wallSeconds, readGBs, profile: addon.takeOpProfile() });
    addon.setOpProfiling(false);
  };
  try {
    const warm = request(0, promptTokens, generate, vocab);
    await complete([warm.start], 16);
    const req = request(1, promptTokens, generate, vocab);
    let history: number[] = [];
    await measure(`prefill ${promptTokens}`, promptTokens, async () => {
      const r = await complete(req.prompt, 1);
      history = [...req.prompt, r.tokens[0]!];
    });
    // The decodes' first step feeds the token the prompt's step picked, as e2e's do.
    await measure(`decode at depth ${promptTokens}`, generate, async () => {
      const r = await complete(history, generate);
      if (r.timings.prefillTokens !== 1) throw new Error(`decode re-evaluated ${r.timings.prefillTokens} tokens`);
    });
    await measure('decode at depth 0', generate, async () => { await complete([req.start], generate); });
  } finally {
    await rt.close();
  }

  for (const p of phases) {
    const prof = p.profile;
    const perStep = (s: number) => `${((1000 * s) / prof.steps).toFixed(3)}`;
    const opSeconds = prof.ops.reduce((n, o) => n + o.seconds, 0);
    const rows = [...prof.ops].sort((a, b) => b.seconds - a.seconds).map((o) => [
      o.label, perStep(o.seconds), `${((100 * o.seconds) / p.wallSeconds).toFixed(1)}%`, (o.calls / prof.steps).toFixed(0),
      o.weightBytes > 0 ? (o.weightBytes / o.seconds / 1e9).toFixed(1) : '', o.flops > 0 ? (o.flops / o.seconds / 1e9).toFixed(1) : '',
    ]);
    rows.push(['step, between ops', perStep(prof.stepSeconds - opSeconds), `${((100 * (prof.stepSeconds - opSeconds)) / p.wallSeconds).toFixed(1)}%`, '', '', '']);
    rows.push(['outside the steps', perStep(p.wallSeconds - prof.stepSeconds), `${((100 * (p.wallSeconds - prof.stepSeconds)) / p.wallSeconds).toFixed(1)}%`, '', '', '']);
    console.log(`\n${p.name}: ${prof.steps} steps, ${(p.tokens / p.wallSeconds).toFixed(1)} tok/s; read ${p.readGBs.toFixed(1)} GB/s just before`);
    console.log(formatTable(['op', 'ms a step', 'of the time', 'calls a step', 'weights GB/s', 'GFLOP/s'], rows));
  }

  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `profile-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(out, JSON.stringify({ machine, limits, model: name, file, level, threads, kvCacheType, phases }, null, 2));
  console.log(`wrote ${out}`);
}
