// Runs the vitest suite and prints the closing line CI reads: `N passed, N failed`.
// Fails when a test failed, when a file could not run, or when no test ran at all.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Tests run against the TypeScript sources, but worker threads (the chat template's render thread)
// run the compiled build, so build it first.
const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit', env: process.env });
if (build.status !== 0) {
  console.log('0 passed, 1 failed, 0 skipped');
  console.log('the TypeScript build failed');
  process.exit(1);
}

const outFile = join(mkdtempSync(join(tmpdir(), 'kiln-test-')), 'results.json');
const args = ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${outFile}`, ...process.argv.slice(2)];
const run = spawnSync('npx', args, { stdio: 'inherit', env: process.env });

let passed = 0, failed = 0, skipped = 0, suiteFailures = 0;
if (existsSync(outFile)) {
  const r = JSON.parse(readFileSync(outFile, 'utf8'));
  passed = r.numPassedTests ?? 0;
  failed = r.numFailedTests ?? 0;
  skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  suiteFailures = (r.testResults ?? []).filter((f) => f.status === 'failed' && (f.assertionResults ?? []).length === 0).length;
}
failed += suiteFailures;
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
if (passed + failed === 0) console.log('no test ran');
process.exit(failed > 0 || passed === 0 || run.status !== 0 ? 1 : 0);
