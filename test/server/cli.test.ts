// `kiln serve` as a user runs it: the real CLI in a child process on a free port, with an API key
// from the environment, stopped by SIGTERM while a stream is in flight (it finishes, exit 0).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MODELS, SHARED, repoRoot } from '../helpers/paths.js';
import { postJson } from './helpers.js';

let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = undefined;
});

function serve(args: string[], env: Record<string, string> = {}): Promise<{ url: string; stderr: () => string; exit: Promise<number | null> }> {
  const proc = spawn(process.execPath, [`${repoRoot}/bin/kiln.js`, 'serve', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  child = proc;
  let err = '';
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /serving '[^']+' at (http:\/\/\S+)/.exec(err);
      if (m) resolve({ url: m[1]!, stderr: () => err, exit });
    });
    void exit.then((code) => reject(new Error(`kiln serve exited (${code}): ${err}`)));
  });
}

function brokenTemplate(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'kiln-cli-')), 'broken.jinja');
  writeFileSync(path, '{% for m in messages %}{{ m.content }');
  return path;
}

describe('kiln serve', () => {
  it('serves with a key from KILN_API_KEY and shuts down gracefully on SIGTERM', async () => {
    const { url, exit } = await serve(
      ['--model', `${MODELS}/stories260K.gguf`, '--chat-template', `${SHARED}/templates/tinyllama.jinja`, '--port', '0', '--threads', '1'],
      { KILN_API_KEY: 'k1' },
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await postJson(`${url}/v1/chat/completions`, {})).status).toBe(401);
    const auth = { authorization: 'Bearer k1' };
    const chat = await postJson(`${url}/v1/chat/completions`, { model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 }, auth);
    expect(chat.status).toBe(200);
    expect((await chat.json()).choices[0].message.role).toBe('assistant');

    const res = await postJson(`${url}/v1/completions`, { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 300, stream: true }, auth);
    const reader = res.body!.getReader();
    await reader.read();
    child!.kill('SIGTERM');
    let body = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      body += new TextDecoder().decode(value);
    }
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(body).toMatch(/"finish_reason":"(length|stop)"/);
    expect(await exit).toBe(0);
  });

  it('prints its usage for --help', async () => {
    const proc = spawn(process.execPath, [`${repoRoot}/bin/kiln.js`, 'serve', '--help'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((resolve) => proc.on('exit', resolve));
    expect(code).toBe(0);
    expect(err).toContain('--parallel N');
  });

  it.each([
    ['--api-key ""', ['--api-key', ''], {}, /--api-key is empty/],
    ['KILN_API_KEY=""', [], { KILN_API_KEY: '' }, /KILN_API_KEY is empty/],
    ['a chat template that does not parse', ['--chat-template', brokenTemplate()], {}, /chat template does not parse/],
  ])('refuses to start with %s', async (_, args, env, message) => {
    const proc = spawn(process.execPath, [`${repoRoot}/bin/kiln.js`, 'serve', '--model', `${MODELS}/stories260K.gguf`, '--port', '0', ...args],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let err = '';
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((resolve) => proc.on('exit', resolve));
    expect(code).not.toBe(0);
    expect(err).toMatch(message);
    expect(err).not.toMatch(/serving/);
  });
});
