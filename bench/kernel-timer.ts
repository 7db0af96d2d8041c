// `npm run bench -- kernel-timer [--type q4_0,q4_k,q5_k,q6_k,q8_0,f16] [--tokens 1,2,4,8,16] [--rows 256]
//   [--cols 2048] [--calls 1000] [--rounds 5] [--level best|avx2] [--compare PATH] [--from-memory MB]
//   [--threads 1]`: the time for a matrix product of `rows` x `cols` weights against a few tokens, as a
// plan runs it (packed first where the kernel level packs the type; the activations' conversion
// included), on one thread with the weights small enough to stay in L2 unless asked otherwise. The
// minimum over `calls` calls times the kernels themselves: on a VM whose memory and neighbours swing,
// `bench kernels` moves 10-30% from run to run where this moves 2-3%. The table gives the least minimum
// over the rounds, the median of the rounds' medians, the weights' GB/s at the minimum, and each token
// count's time against one token's. --compare loads a second build of the addon (another checkout's
// build/Release/kiln.node) into the same process and alternates the two round by round: the way to A/B a
// kernel change. A kernel's speed in L2 is not its speed against weights streamed from memory (what
// decode and a continuous-batching step read): --from-memory MB cycles the calls through copies of the
// weights that fill MB megabytes, so each call reads its weights from memory; compare the medians there,
// since the memory swings from call to call. One thread from memory is not two: with --threads 2
// --from-memory each call is a decode product as the plan splits it over the threads. Still, only an
// end-to-end run (alternating builds) says what a change does to decode.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { GGML_TYPES, GgmlType, rowBytes } from '../src/gguf/ggml-type.js';
import { native, type NativeAddon } from '../src/native/binding.js';
import { argValue, describeMachine, formatTable, machineInfo, median, randomFloats, REPO_ROOT, warnAboutAddon } from './machine.js';

interface Timing { minUs: number; medianUs: number; packed: boolean }

function typeByName(name: string): GgmlType {
  const entry = Object.entries(GGML_TYPES).find(([, t]) => t.name.toLowerCase() === name.toLowerCase());
  if (!entry || !entry[1].isWeightType) throw new Error(`--type ${name}: not a weight type kiln computes with`);
  return Number(entry[0]) as GgmlType;
}

/** Whether a build's timer takes its threads argument (an older one ignores it): it must refuse 0 threads. */
function takesThreads(addon: NativeAddon): boolean {
  try {
    addon.timeMulMat(GgmlType.Q8_0, new Uint8Array(34 * 8), 8, 32, new Float32Array(32), 1, 1, 1, 0);
    return false;
  } catch (e) {
    return /threads/.test((e as Error).message);
  }
}

function numbers(value: string, name: string): number[] {
  const out = value.split(',').map(Number);
  if (out.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${name} takes positive integers, got ${value}`);
  return out;
}

export async function run(args: string[]): Promise<void> {
  const types = (argValue(args, '--type') ?? 'q4_0,q4_k,q5_k,q6_k,q8_0,f16').split(',').map(typeByName);
  const tokenCounts = numbers(argValue(args, '--tokens') ?? '1,2,4,8,16', '--tokens');
  const [rows] = numbers(argValue(args, '--rows') ?? '256', '--rows');
  const [cols] = numbers(argValue(args, '--cols') ?? '2048', '--cols');
  const [calls] = numbers(argValue(args, '--calls') ?? '1000', '--calls');
  const [rounds] = numbers(argValue(args, '--rounds') ?? '5', '--rounds');
  const level = (argValue(args, '--level') ?? 'best') as 'avx2' | 'best';
  const comparePath = argValue(args, '--compare');
  const fromMemoryMb = argValue(args, '--from-memory');
  const poolBytes = fromMemoryMb === undefined ? 0 : numbers(fromMemoryMb, '--from-memory')[0]! * 2 ** 20;
  const [threads] = numbers(argValue(args, '--threads') ?? '1', '--threads');

  const machine = machineInfo();
  warnAboutAddon(machine);
  console.log(describeMachine(machine));
  const builds: Array<{ name: string; addon: NativeAddon }> = [{ name: 'this build', addon: native() }];
  if (comparePath) {
    const addon = createRequire(import.meta.url)(resolve(comparePath)) as Partial<NativeAddon>;
    if (typeof addon.timeMulMat !== 'function') throw new Error(`--compare ${comparePath}: that build has no timeMulMat (builds from before the kernel timer)`);
    if (!takesThreads(addon as NativeAddon)) throw new Error(`--compare ${comparePath}: that build's timeMulMat takes no threads argument (an older build); rebuild it`);
    builds.push({ name: comparePath, addon: addon as NativeAddon });
  }
  for (const b of builds) b.addon.setKernelLevel(level);
  const where = poolBytes ? `from memory (copies filling ${poolBytes / 2 ** 20} MB)` : 'in cache';
  console.log(`${threads} thread${threads > 1 ? 's' : ''}, ${rows} x ${cols} weights ${where}, ${calls} calls a round, ${rounds} rounds${builds.length > 1 ? ' alternating the builds' : ''}, kernel level ${level}`);

  // (build, type, tokens) -> each round's timing
  const times = new Map<string, Timing[]>();
  const key = (b: number, type: GgmlType, t: number) => `${b}/${type}/${t}`;
  const inputs = new Map<GgmlType, Uint8Array>();
  for (const type of types) {
    if (cols % GGML_TYPES[type].blockSize !== 0) throw new Error(`--cols ${cols} is not a whole number of ${GGML_TYPES[type].name} blocks`);
    const w = new Uint8Array(rowBytes(type, cols) * rows);
    native().quantize(type, randomFloats(rows * cols, 17 + type, Math.sqrt(3 / cols)), w);
    inputs.set(type, w);
  }
  const x = new Map(tokenCounts.map((t) => [t, randomFloats(t * cols, 5 + t)]));
  for (let r = 0; r < rounds; r++) {
    for (const type of types) {
      for (const t of tokenCounts) {
        for (let b = 0; b < builds.length; b++) {
          const w = inputs.get(type)!;
          const copies = Math.max(1, Math.ceil(poolBytes / w.byteLength));
          const timing = builds[b]!.addon.timeMulMat(type, w, rows, cols, x.get(t)!, t, calls, copies, threads);
          const k = key(b, type, t);
          times.set(k, [...(times.get(k) ?? []), timing]);
        }
      }
    }
    process.stderr.write(`round ${r + 1}/${rounds} done\n`);
  }

  const best = (b: number, type: GgmlType, t: number) => Math.min(...times.get(key(b, type, t))!.map((v) => v.minUs));
  const header = ['type', 'tokens', 'packed'];
  for (const b of builds) header.push(`${b.name}: min us`, 'median us', 'GB/s', 'x 1 token');
  if (builds.length > 1) header.push('this / compared: min', 'median');
  const table: string[][] = [];
  const results: Array<Record<string, unknown>> = [];
  for (const type of types) {
    for (const t of tokenCounts) {
      const row = [GGML_TYPES[type].name, String(t), times.get(key(0, type, t))![0]!.packed ? 'yes' : 'no'];
      builds.forEach((build, b) => {
        const min = best(b, type, t);
        const med = median(times.get(key(b, type, t))!.map((v) => v.medianUs));
        const one = tokenCounts.includes(1) ? best(b, type, 1) : NaN;
        row.push(min.toFixed(2), med.toFixed(2), (inputs.get(type)!.byteLength / min / 1000).toFixed(1), Number.isNaN(one) ? '-' : `${(min / one).toFixed(2)}x`);
        results.push({ build: build.name, type: GGML_TYPES[type].name, tokens: t, minUs: min, medianUs: med, rounds: times.get(key(b, type, t)) });
      });
      if (builds.length > 1) {
        const med = (b: number) => median(times.get(key(b, type, t))!.map((v) => v.medianUs));
        row.push((best(0, type, t) / best(1, type, t)).toFixed(3), (med(0) / med(1)).toFixed(3));
      }
      table.push(row);
    }
  }
  console.log(formatTable(header, table));

  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `kernel-timer-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ machine, level, rows, cols, calls, rounds, threads, fromMemoryBytes: poolBytes, compare: comparePath ?? null, results }, null, 2));
  console.log(`wrote ${file}`);
}
