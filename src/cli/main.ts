// Command-line entry: `kiln run`, `kiln serve`, `kiln info`, `kiln convert`, `kiln bench`.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KilnError } from '../errors.js';
import { openGguf } from '../gguf/open-gguf.js';
import { Runtime } from '../runtime/runtime.js';
import { formatInfo } from './info.js';

const USAGE = `usage:
  kiln run --model FILE [--temperature T] [--max-tokens N] [--seed S] [--threads N] [--backend B] [--verbose] PROMPT
  kiln serve --model FILE [--chat-template FILE] [--parallel N] [--batch N] [--max-queue N] [--ctx N] [--threads N] [--host HOST] [--port N] [--api-key KEY]
             (kiln serve --help lists every option)
  kiln info FILE
  kiln convert <hf-model-dir> <out.gguf> [--type f16|q8_0|q4_0]
  kiln bench <name> [options]
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'run':
        return await run(rest);
      case 'info':
        return info(rest);
      case 'serve': {
        const { serve } = await import('./serve.js');
        return await serve(rest);
      }
      case 'convert': {
        const { convert } = await import('./convert.js');
        return await convert(rest);
      }
      case 'bench': {
        const { runBench } = await import('../../bench/main.js');
        return await runBench(rest);
      }
      case '--version':
      case 'version': {
        const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
        process.stdout.write(`${pkg.version}\n`);
        return 0;
      }
      default:
        process.stderr.write(USAGE);
        return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
    }
  } catch (err) {
    if (err instanceof KilnError) {
      process.stderr.write(`kiln: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      model: { type: 'string', short: 'm' },
      temperature: { type: 'string' },
      'max-tokens': { type: 'string' },
      seed: { type: 'string' },
      threads: { type: 'string' },
      backend: { type: 'string' },
      'ctx': { type: 'string' },
      verbose: { type: 'boolean', short: 'v' },
    },
  });
  if (!values.model || positionals.length === 0) {
    process.stderr.write(USAGE);
    return 2;
  }
  const num = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new CliError(`--${name} must be a number, got '${v}'`);
    return n;
  };
  const threads = num('threads', values.threads);
  const contextSize = num('ctx', values.ctx);
  const rt = await Runtime.load({
    model: values.model,
    ...(values.backend ? { backend: values.backend as 'cpu' } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(contextSize !== undefined ? { contextSize } : {}),
  });
  try {
    const seed = num('seed', values.seed);
    const result = await rt.complete({
      prompt: positionals.join(' '),
      temperature: num('temperature', values.temperature) ?? 0.8,
      maxTokens: num('max-tokens', values['max-tokens']) ?? 256,
      ...(seed !== undefined ? { seed } : {}),
      onToken: (text) => process.stdout.write(text),
    });
    if (process.stdout.isTTY) process.stdout.write('\n');
    if (values.verbose) {
      const t = result.timings;
      process.stderr.write(
        `prefill: ${t.prefillTokens} tokens in ${t.prefillMs.toFixed(1)} ms (${rate(t.prefillTokens, t.prefillMs)} tok/s)\n` +
          `decode: ${t.decodeTokens} tokens in ${t.decodeMs.toFixed(1)} ms (${rate(t.decodeTokens, t.decodeMs)} tok/s)\n` +
          `finish: ${result.finishReason}, threads: ${rt.info.threads}\n`,
      );
    }
  } finally {
    await rt.close();
  }
  return 0;
}

function info(argv: string[]): number {
  if (argv.length !== 1) {
    process.stderr.write(USAGE);
    return 2;
  }
  const { file } = openGguf(argv[0]!);
  process.stdout.write(formatInfo(file));
  return 0;
}

function rate(tokens: number, ms: number): string {
  return ms > 0 ? ((tokens * 1000) / ms).toFixed(1) : '-';
}

class CliError extends KilnError {
  readonly code = 'invalid_cli_argument';
}
