// `npm run bench -- <name> [args]` and `kiln bench <name> [args]`: each benchmark is a module
// bench/<name>.ts exporting `run(args: string[]): Promise<void>`.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export async function runBench(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const here = dirname(fileURLToPath(import.meta.url));
  if (!name || !/^[a-z0-9-]+$/.test(name) || !existsSync(join(here, `${name}.js`)) || name === 'main') {
    process.stderr.write('usage: kiln bench <kernels|kernel-timer|e2e|profile|batched|models|sampler|streamer|tokenizer|agent|server|hostile|grammar|gguf-fuzz> [options]\n');
    return 2;
  }
  const mod = (await import(`./${name}.js`)) as { run(args: string[]): Promise<void> };
  await mod.run(args);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  runBench(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
