#!/usr/bin/env node
// The `kiln` command: a thin launcher for the compiled CLI.
import { main } from '../dist/src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => {
    process.stderr.write(`kiln: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
