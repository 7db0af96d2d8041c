// `npm run bench -- forward-batch [--type q4_0,q8_0,q4_k] [--rows 1,2,4,8] [--steps 6] [--threads N] [--level avx2]`:
// decode throughput of one CPU forwardBatch step over B slots' decode rows (the weights read once
// per step) against the same B rows as B single-row forward() calls (read B times), on the
// TinyLlama-shape bench model of each weight type (bench/models.ts writes it on first use).
import { CpuBackend } from '../src/backend/cpu/cpu-backend.js';
import { openGguf } from '../src/gguf/open-gguf.js';
import { buildDecoderGraph } from '../src/model/decoder-graph.js';
import { readHParams } from '../src/model/hparams.js';
import { ModelWeights } from '../src/model/weights.js';
import { native } from '../src/native/binding.js';
import { argValue, describeMachine, formatTable, machineInfo } from './machine.js';
import { ensureBenchModel, SHAPES } from './models.js';

const PROMPT = 16;

export async function run(args: string[]): Promise<void> {
  const types = (argValue(args, '--type') ?? 'q4_0,q8_0,q4_k').split(',');
  const batches = (argValue(args, '--rows') ?? '1,2,4,8').split(',').map(Number);
  const steps = Number(argValue(args, '--steps') ?? 6);
  const threads = Number(argValue(args, '--threads') ?? native().cpuFeatures().physicalCores);
  const slots = Math.max(...batches);
  const level = argValue(args, '--level') === 'avx2' ? 'avx2' : 'best';
  native().setKernelLevel(level);
  console.log(describeMachine(machineInfo()));
  console.log(`CPU kernels: ${level} tier`);
  const rows: string[][] = [];
  for (const type of types) {
    const path = ensureBenchModel(SHAPES.tinyllama!, type);
    const { file, buffer } = openGguf(path);
    const hp = readHParams(file);
    const graph = await new CpuBackend().compile(buildDecoderGraph(hp, new ModelWeights(file, buffer, hp.architecture)), {
      slots, contextSize: PROMPT + 2 * steps * batches.length + 8, maxBatch: Math.max(PROMPT, slots), kvCacheType: 'f16', threads,
    });
    try {
      const w = graph.outputWidth;
      const prompt = Int32Array.from({ length: PROMPT }, (_, i) => 100 + i);
      await graph.forward(prompt, Int32Array.from(prompt.keys()), 0, false, new Float32Array(w));
      for (let s = 1; s < slots; s++) graph.copySlot(0, s, PROMPT);
      let pos = PROMPT;
      let base = 0;
      for (const b of batches) {
        const ids = Int32Array.from({ length: b }, (_, i) => i);
        const out = new Float32Array(b * w);
        // One warm-up step each way, then `steps` timed; every step writes the next position. Also
        // the process's CPU time per token: on a machine shared with other work, wall time
        // measures the others too.
        const time = async (step: () => Promise<void>) => {
          await step();
          pos++;
          const started = performance.now();
          const cpu = process.cpuUsage();
          for (let i = 0; i < steps; i++, pos++) await step();
          const used = process.cpuUsage(cpu);
          return { rate: (b * steps) / ((performance.now() - started) / 1000), cpuMs: (used.user + used.system) / 1000 / (b * steps) };
        };
        const batched = await time(() => graph.forwardBatch({ tokens: ids.map((i) => 200 + i), positions: new Int32Array(b).fill(pos), slots: ids, outputs: ids }, out));
        const sequential = await time(async () => {
          for (let i = 0; i < b; i++) await graph.forward(Int32Array.of(200 + i), Int32Array.of(pos), i, false, out.subarray(i * w, (i + 1) * w));
        });
        if (b === batches[0]) base = batched.rate;
        rows.push([type, String(b), batched.rate.toFixed(2), sequential.rate.toFixed(2), `${(batched.rate / sequential.rate).toFixed(2)}x`,
          `${(batched.rate / base).toFixed(2)}x`, batched.cpuMs.toFixed(0), sequential.cpuMs.toFixed(0)]);
        process.stderr.write(`${type} B=${b}: ${batched.rate.toFixed(2)} tok/s batched, ${sequential.rate.toFixed(2)} sequential\n`);
      }
    } finally {
      graph.dispose();
    }
  }
  console.log(formatTable(['type', 'B', 'batched tok/s', 'B forwards tok/s', 'batched/forwards', `vs B=${batches[0]}`, 'batched CPU ms/tok', 'forwards CPU ms/tok'], rows));
}
