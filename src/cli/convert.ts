// `kiln convert <hf-model-dir> <out.gguf> [--type f16|q8_0|q4_0]`: a progress bar on stderr when
// it is a terminal, one summary line otherwise.
import { parseArgs } from 'node:util';
import { convertHfModel, type ConvertProgress, type OutputType } from '../convert/convert-model.js';
import { InvalidArgumentError } from '../errors.js';

export const CONVERT_USAGE = 'kiln convert <hf-model-dir> <out.gguf> [--type f16|q8_0|q4_0]';

const TYPES: readonly OutputType[] = ['f16', 'q8_0', 'q4_0'];
/** Redraws of the bar at most this often: a redraw per chunk would flood a slow terminal. */
const REDRAW_MS = 100;
const BAR_WIDTH = 30;

export async function convert(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { type: { type: 'string', short: 't' } } });
  if (positionals.length !== 2) {
    process.stderr.write(`usage: ${CONVERT_USAGE}\n`);
    return 2;
  }
  const type = (values.type ?? 'f16') as OutputType;
  if (!TYPES.includes(type)) throw new InvalidArgumentError(`--type must be one of ${TYPES.join(', ')}, got '${values.type}'`, 'type');

  const [dir, out] = positionals as [string, string];
  const stderr = process.stderr;
  const started = performance.now();
  let lastDraw = 0;
  const onProgress = stderr.isTTY
    ? (p: ConvertProgress) => {
      const now = performance.now();
      if (now - lastDraw < REDRAW_MS && p.bytesWritten < p.totalBytes) return;
      lastDraw = now;
      stderr.write(`\r${progressLine(p, stderr.columns || 80)}\x1b[K`);
    }
    : undefined;
  try {
    const r = await convertHfModel(dir, out, { type, ...(onProgress ? { onProgress } : {}) });
    if (stderr.isTTY) stderr.write('\r\x1b[K');
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    stderr.write(`kiln convert: wrote ${r.path} (${r.architecture}, ${r.type}, ${r.tensorCount} tensors, ${formatBytes(r.bytes)}, tokenizer ${r.tokenizer.model}/${r.tokenizer.pre}${r.tokenizer.preFromRegex ? ' (named by its regex)' : ''} with ${r.tokenizer.tokens} tokens) in ${seconds} s\n`);
  } catch (err) {
    if (stderr.isTTY) stderr.write('\n');
    throw err;
  }
  return 0;
}

/** "[#######.......]  48%  1.2 GB / 2.5 GB  blk.7.ffn_up.weight", fitted to `columns`. */
export function progressLine(p: ConvertProgress, columns: number): string {
  const fraction = p.totalBytes > 0 ? Math.min(1, p.bytesWritten / p.totalBytes) : 1;
  const filled = Math.round(fraction * BAR_WIDTH);
  const line = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${(fraction * 100).toFixed(0).padStart(3)}%  ${formatBytes(p.bytesWritten)} / ${formatBytes(p.totalBytes)}  ${p.tensor}`;
  return line.slice(0, Math.max(0, columns - 1));
}

function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e3).toFixed(1)} kB`;
}
