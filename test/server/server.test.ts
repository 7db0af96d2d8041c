// Server infrastructure through real HTTP: health, models, metrics, API keys, body limit, and
// graceful shutdown.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type Running, postJson, startServer } from './helpers.js';

const COMPLETION = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 4, temperature: 0 };

let s: Running | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('server', () => {
  it('serves /health, /v1/models (OpenAI and Anthropic shapes) and /metrics', async () => {
    s = await startServer();
    expect(await (await fetch(`${s.url}/health`)).json()).toMatchObject({ status: 'ok' });
    const openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' });
    const models = await openai.models.list();
    expect(models.data.map((m) => [m.id, m.object])).toEqual([['stories260K', 'model']]);
    expect((await openai.models.retrieve('stories260K')).id).toBe('stories260K');
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: 'unused' });
    const aModels = await anthropic.models.list();
    expect(aModels.data.map((m) => [m.id, m.type])).toEqual([['stories260K', 'model']]);

    await postJson(`${s.url}/v1/completions`, COMPLETION);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toContain('kiln_requests_total{route="/v1/completions",status="200"} 1');
    expect(metrics).toContain('kiln_prompt_tokens_total 5');
    expect(metrics).toContain('kiln_completion_tokens_total 4');
    expect(metrics).toMatch(/kiln_prompt_tokens_cached_total \d+/);
    expect(metrics).toContain('kiln_queue_depth 0');
    expect(metrics).toMatch(/kiln_decode_tokens_per_second [0-9.]+/);
  });

  it('requires the API key on every route but /health, as Bearer or x-api-key', async () => {
    s = await startServer({}, { apiKey: 'sekret' });
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
    const none = await postJson(`${s.url}/v1/completions`, COMPLETION);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });
    const wrong = await postJson(`${s.url}/v1/messages`, {}, { 'x-api-key': 'nope' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect((await postJson(`${s.url}/v1/completions`, COMPLETION, { authorization: 'Bearer sekret' })).status).toBe(200);
    expect((await postJson(`${s.url}/v1/completions`, COMPLETION, { 'x-api-key': 'sekret' })).status).toBe(200);
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sekret' });
    expect((await client.completions.create(COMPLETION)).choices[0]!.text.length).toBeGreaterThan(0);
    await expect(new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'bad' }).completions.create(COMPLETION)).rejects.toMatchObject({ status: 401 });
  });

  it('refuses bodies over the limit with 413 and keeps serving', async () => {
    s = await startServer({}, { bodyLimit: 1024 });
    const big = await postJson(`${s.url}/v1/completions`, { ...COMPLETION, prompt: 'x'.repeat(2000) });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: 'request_too_large', type: 'invalid_request_error' } });
    const bigA = await postJson(`${s.url}/v1/messages`, { pad: 'x'.repeat(2000) });
    expect(bigA.status).toBe(413);
    expect(await bigA.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    expect((await postJson(`${s.url}/v1/completions`, COMPLETION)).status).toBe(200);
  });

  it('shuts down gracefully: the in-flight stream finishes, new requests are refused', async () => {
    s = await startServer();
    const res = await postJson(`${s.url}/v1/completions`, { ...COMPLETION, max_tokens: 200, stream: true });
    const reader = res.body!.getReader();
    await reader.read();
    const closing = s.server.close({ graceMs: 30_000 });
    await new Promise((r) => setTimeout(r, 20));
    expect((await fetch(`${s.url}/health`).catch(() => null))?.status ?? 'refused').not.toBe(200);
    let body = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      body += new TextDecoder().decode(value);
    }
    expect(body).toContain('"finish_reason":"length"');
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    await closing;
  });

  it('cancels in-flight generations when the grace period runs out, with an error event', async () => {
    // A context far past the model's 512 keeps the generation running well beyond the grace period.
    s = await startServer({ contextSize: 8192 });
    const res = await postJson(`${s.url}/v1/completions`, { ...COMPLETION, max_tokens: 100_000, stream: true });
    const reader = res.body!.getReader();
    await reader.read();
    const closing = s.server.close({ graceMs: 10 });
    let body = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      body += new TextDecoder().decode(value);
    }
    await closing;
    expect(body).toContain('"code":"generation_cancelled"');
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
  });
});
