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

// One vitest run; its counts from the JSON report (a file that could not run counts as failed).
function vitest(args, env) {
  const outFile = join(mkdtempSync(join(tmpdir(), 'kiln-test-')), 'results.json');
  const run = spawnSync('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${outFile}`, ...args], { stdio: 'inherit', env });
  const c = { passed: 0, failed: 0, skipped: 0, ok: run.status === 0 };
  if (existsSync(outFile)) {
    const r = JSON.parse(readFileSync(outFile, 'utf8'));
    c.passed = r.numPassedTests ?? 0;
    c.failed = r.numFailedTests ?? 0;
    c.skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    c.failed += (r.testResults ?? []).filter((f) => f.status === 'failed' && (f.assertionResults ?? []).length === 0).length;
  }
  return c;
}

const args = process.argv.slice(2);
const total = vitest(args, process.env);

// The AVX-512 tier on machines without AVX-512: where the emulated build exists (npm run
// build:emulated-avx512, which .ci/run makes), it is brought up to date and the tests that hold the
// tiers to the same bits run again against it (CMakeLists.txt, native/cpu/emulated-avx512.h). Only
// with the whole suite, not when the command names its own tests.
const EMULATED_ADDON = 'build-emulated-avx512/Release/kiln.node';
const EMULATED_TESTS = ['test/kernels', 'test/model/forward-batch.test.ts', 'test/model/weight-types.test.ts',
  'test/model/llamacpp-logits.test.ts', 'test/model/stories260k.test.ts'];
if (args.length === 0) {
  if (!existsSync(EMULATED_ADDON)) {
    console.log('emulated AVX-512 pass skipped: no build-emulated-avx512 (npm run build:emulated-avx512; it needs SIMDe, apt-get install libsimde-dev)');
  } else if (spawnSync('npm', ['run', '-s', 'build:emulated-avx512'], { stdio: 'inherit', env: process.env }).status !== 0) {
    console.log('emulated AVX-512 pass: the build failed');
    total.failed += 1;
    total.ok = false;
  } else {
    const emulated = vitest(EMULATED_TESTS, { ...process.env, KILN_ADDON: EMULATED_ADDON });
    console.log(`emulated AVX-512 pass: ${emulated.passed} passed, ${emulated.failed} failed, ${emulated.skipped} skipped`);
    if (emulated.passed === 0) emulated.failed += 1;
    total.passed += emulated.passed;
    total.failed += emulated.failed;
    total.skipped += emulated.skipped;
    total.ok &&= emulated.ok;
  }
}

console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
if (total.passed + total.failed === 0) console.log('no test ran');
process.exit(total.failed > 0 || total.passed === 0 || !total.ok ? 1 : 0);
