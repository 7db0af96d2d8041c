// kiln serve against hostile clients and web pages (issue 15), on a real port with raw HTTP where
// a browser or an attacker would send what the SDKs never do: foreign Origins and Hosts, form
// bodies, trickled bodies, too many connections, deep JSON, huge prompts and echoed input.
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from '../../src/server/create-server.js';
import { MAX_METADATA_PAIRS } from '../../src/server/fields.js';
import { ResponsesStore } from '../../src/server/responses-store.js';
import { type Running, startServer } from './helpers.js';

interface RawResponse { status: number; headers: Record<string, string | string[] | undefined>; body: string }

function raw(url: string, opts: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method: opts.method ?? 'POST', path: opts.path, headers: opts.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const CHAT = JSON.stringify({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('browser safety', () => {
  let s: Running;
  let open: Running;
  beforeAll(async () => {
    s = await startServer({ chatTemplate: '{% for m in messages %}{{ m.content }}{% endfor %}' });
    open = await startServer({ chatTemplate: '{% for m in messages %}{{ m.content }}{% endfor %}' }, { corsOrigins: ['http://app.example:3000'] });
  });
  afterAll(async () => {
    await s.close();
    await open.close();
  });

  it.each([
    ['text/plain', 'text/plain;charset=UTF-8'],
    ['form', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
  ])('refuses a %s body with 415 and runs nothing', async (_, type) => {
    const res = await raw(s.url, { path: '/v1/chat/completions', headers: { 'content-type': type }, body: CHAT });
    expect(res.status).toBe(415);
    expect(JSON.parse(res.body).error.code).toBe('unsupported_media_type');
  });

  it('takes application/json with a charset', async () => {
    const res = await raw(s.url, { path: '/v1/chat/completions', headers: { 'content-type': 'application/json; charset=utf-8' }, body: CHAT });
    expect(res.status).toBe(200);
  });

  it('refuses a request from a web origin it was not told to allow, even a simple one', async () => {
    const res = await raw(s.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, origin: 'https://evil.example' }, body: CHAT });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body).error.code).toBe('origin_not_allowed');
    const anthropic = await raw(s.url, { path: '/v1/messages', headers: { ...JSON_HEADERS, origin: 'null' }, body: '{}' });
    expect(anthropic.status).toBe(403);
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
  });

  it('refuses a Host that is not loopback while bound to loopback (DNS rebinding), and takes loopback names', async () => {
    for (const host of ['evil.example', 'evil.example:8080', '10.0.0.1', 'localhost.evil.example']) {
      const res = await raw(s.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, host }, body: CHAT });
      expect(res.status, host).toBe(403);
      expect(JSON.parse(res.body).error.code).toBe('host_not_allowed');
    }
    const port = new URL(s.url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `127.1.2.3:${port}`, `[::1]:${port}`, 'app.localhost']) {
      const res = await raw(s.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, host }, body: CHAT });
      expect(res.status, host).toBe(200);
    }
    expect((await raw(s.url, { method: 'GET', path: '/health', headers: { host: 'evil.example' } })).status).toBe(403);
  });

  it('lets an allowed origin in with CORS headers, and answers its preflight', async () => {
    const origin = 'http://app.example:3000';
    const pre = await raw(open.url, {
      method: 'OPTIONS', path: '/v1/chat/completions',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe(origin);
    expect(String(pre.headers['access-control-allow-headers'])).toMatch(/content-type/);
    expect(String(pre.headers['access-control-allow-headers'])).toMatch(/authorization/);
    const res = await raw(open.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, origin }, body: CHAT });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
    const streamed = await raw(open.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, origin }, body: JSON.stringify({ ...JSON.parse(CHAT), stream: true }) });
    expect(streamed.headers['access-control-allow-origin']).toBe(origin);
    expect((await raw(open.url, { path: '/v1/chat/completions', headers: { ...JSON_HEADERS, origin: 'http://app.example:3001' }, body: CHAT })).status).toBe(403);
  });
});

describe('slow and numerous connections', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startServer({}, { requestTimeoutMs: 600, headersTimeoutMs: 400, maxConnectionsPerClient: 3 });
  });
  afterAll(async () => s.close());

  function socketTo(url: string): Promise<Socket> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const sock = connect(Number(port), hostname, () => resolve(sock));
      sock.on('error', reject);
    });
  }

  function closed(sock: Socket): Promise<string> {
    let got = '';
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => { got += d; });
    return new Promise((resolve) => sock.on('close', () => resolve(got)));
  }

  it('cuts off a body that trickles in, with 408, and one whose headers never end', async () => {
    const slowBody = await socketTo(s.url);
    const bodyDone = closed(slowBody);
    slowBody.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`);
    const timer = setInterval(() => slowBody.writable && slowBody.write(' '), 100);
    const slowHeaders = await socketTo(s.url);
    const headersDone = closed(slowHeaders);
    slowHeaders.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const t0 = performance.now();
    const [bodyReply] = await Promise.all([bodyDone, headersDone]);
    clearInterval(timer);
    expect(bodyReply).toMatch(/^HTTP\/1\.1 408/);
    // Node checks the timeouts every 500 ms here; without them both would wait for ever.
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('answers a connection past the per-client limit with 503 and Retry-After, in the protocol shape', async () => {
    const held = await Promise.all([socketTo(s.url), socketTo(s.url), socketTo(s.url)]);
    const extra = await socketTo(s.url);
    const reply = closed(extra);
    extra.write(`POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`);
    const text = await reply;
    expect(text).toMatch(/^HTTP\/1\.1 503/);
    expect(text).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    for (const h of held) h.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });
});

describe('bad requests are 4xx before any work, and echo little', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startServer({ chatTemplate: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}' });
  });
  afterAll(async () => s.close());

  const post = (path: string, body: string) => raw(s.url, { path, headers: JSON_HEADERS, body });

  it('refuses JSON nested thousands deep (Anthropic tool_use input, Responses metadata) with 400', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const anthropic = `{"model":"stories260K","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{"x":${deep(5000)}}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`;
    const a = await post('/v1/messages', anthropic);
    expect(a.status).toBe(400);
    expect(JSON.parse(a.body).error.type).toBe('invalid_request_error');
    const responses = await post('/v1/responses', `{"model":"stories260K","input":"hi","metadata":{"k":${deep(100_000)}}}`);
    expect(responses.status).toBe(400);
    expect(JSON.parse(responses.body).error.code).toBe('body_too_deep');
  });

  it('holds Responses metadata to OpenAI limits', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: MAX_METADATA_PAIRS + 1 }, (_, i) => [`k${i}`, 'v']));
    for (const metadata of [tooMany, { k: 'v'.repeat(513) }, { ['k'.repeat(65)]: 'v' }, { k: { nested: 'v' } }]) {
      const res = await post('/v1/responses', JSON.stringify({ model: 'stories260K', input: 'hi', max_output_tokens: 2, metadata }));
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error.param).toMatch(/^metadata/);
    }
    const ok = await post('/v1/responses', JSON.stringify({ model: 'stories260K', input: 'hi', max_output_tokens: 2, metadata: { k: 'v' } }));
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).metadata).toEqual({ k: 'v' });
  });

  it.each([
    ['a prompt of 1 MB of spaces', '/v1/completions', () => JSON.stringify({ model: 'stories260K', prompt: ' '.repeat(1 << 20), max_tokens: 1 })],
    ['200,000 words', '/v1/completions', () => JSON.stringify({ model: 'stories260K', prompt: 'once '.repeat(200_000), max_tokens: 1 })],
    // Short enough in characters to be tokenized; tokenizing stops once past the context.
    ['2,000 one-letter words', '/v1/completions', () => JSON.stringify({ model: 'stories260K', prompt: 'a b '.repeat(1000), max_tokens: 1 })],
    ['10,000 short messages', '/v1/chat/completions', () => JSON.stringify({ model: 'stories260K', max_tokens: 1, messages: Array.from({ length: 10_000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' })) })],
  ])('answers %s with 400 context_length_exceeded', async (_, path, body) => {
    const res = await post(path, body());
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error.code).toBe('context_length_exceeded');
    expect(s.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('quotes at most a short prefix of what it echoes', async () => {
    const model = 'm'.repeat(7 << 20);
    const res = await post('/v1/chat/completions', JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }));
    expect(res.status).toBe(404);
    expect(res.body.length).toBeLessThan(1024);
    expect(JSON.parse(res.body).error.message).toContain(`${7 << 20} characters`);
  });
});

describe('the Responses store', () => {
  it('stays within its byte bound and keeps copies', () => {
    const store = new ResponsesStore(1000, 16 << 20);
    const big = 'x'.repeat(1 << 20);
    // Each entry holds 2 M characters: 4 MB by the store's accounting, so 3 fit.
    for (let i = 0; i < 50; i++) store.set(`resp_${i}`, { response: { id: `resp_${i}`, text: big }, conversation: [{ role: 'user', content: big }] });
    expect(store.bytes).toBeLessThanOrEqual(16 << 20);
    expect(store.size).toBe(3);
    expect(store.get('resp_46')).toBeUndefined();
    const got = store.get('resp_49')!;
    (got.response as { text: string }).text = 'changed';
    expect((store.get('resp_49')!.response as { text: string }).text).toBe(big);
  });

  it('keeps no entry larger than itself, and evicts by count too', () => {
    const store = new ResponsesStore(2, 1 << 20);
    store.set('a', { response: {}, conversation: ['y'.repeat(1 << 20)] });
    expect(store.size).toBe(0);
    for (const id of ['b', 'c', 'd']) store.set(id, { response: { id }, conversation: [] });
    expect([store.get('b'), store.get('c')?.response, store.get('d')?.response]).toEqual([undefined, { id: 'c' }, { id: 'd' }]);
  });
});

describe('the API key', () => {
  it('refuses an empty key at start', async () => {
    const { runtime } = await startServer();
    try {
      for (const apiKey of ['', '   ']) expect(() => createServer({ runtime, modelId: 'm', apiKey })).toThrow(/empty/);
    } finally {
      await runtime.close();
    }
  });
});

describe('hostile chat templates', () => {
  it('fails the load on a template that does not parse, or cannot render a short conversation', async () => {
    await expect(startServer({ chatTemplate: '{% for m in messages %}{{ m.content }' })).rejects.toThrow(/does not parse/);
    await expect(startServer({ chatTemplate: '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}' }))
      .rejects.toThrow(/MAX_TEMPLATE_/);
  });

  it('answers a render past a limit with a 500 naming it, and keeps serving', async () => {
    const s = await startServer({ chatTemplate: "{% if messages|length > 2 %}{% set ns = namespace(s='a') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}" });
    try {
      const many = { model: 'stories260K', max_tokens: 2, messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] };
      const res = await raw(s.url, { path: '/v1/chat/completions', headers: JSON_HEADERS, body: JSON.stringify(many) });
      expect(res.status).toBe(500);
      expect(JSON.parse(res.body).error).toMatchObject({ code: 'chat_template_limit_exceeded' });
      expect(JSON.parse(res.body).error.message).toMatch(/MAX_TEMPLATE_CHARS/);
      expect((await raw(s.url, { path: '/v1/chat/completions', headers: JSON_HEADERS, body: CHAT })).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
