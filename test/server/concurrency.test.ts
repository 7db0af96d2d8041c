// Concurrency on the real model: N concurrent requests at temperature 0 give the text each gives
// alone (with and without queueing), also when they start at different moments and share forward
// steps (continuous batching), through the official SDKs; a client that disconnects cancels its
// generation within one decode step and frees its slot; a flood beyond --max-queue gets 503s with
// Retry-After while /health answers; /metrics shows the scheduler's histograms and gauges.
import Anthropic from '@anthropic-ai/sdk';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { SHARED } from '../helpers/paths.js';
import type { CompleteOptions } from '../../src/runtime/runtime.js';
import type { ServedRuntime } from '../../src/server/server-context.js';
import { type Running, postJson, startServer } from './helpers.js';

const PROMPTS = ['Once upon a time', 'The little dog', 'Lily went to the park', 'One day, Tom'];

let s: Running | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

async function streamText(client: OpenAI, prompt: string): Promise<string> {
  const stream = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 60, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  return text;
}

describe('concurrency', () => {
  for (const slots of [4, 2]) {
    it(`4 concurrent streams on ${slots} slots give the same text as alone`, async () => {
      s = await startServer({ slots });
      const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const alone: string[] = [];
      for (const p of PROMPTS) alone.push(await streamText(client, p));
      expect(new Set(alone).size).toBe(PROMPTS.length);
      const together = await Promise.all(PROMPTS.map((p) => streamText(client, p)));
      expect(together).toEqual(alone);
    });
  }

  it('streams started at different moments share steps and each give their solo text (openai and anthropic SDKs)', async () => {
    const template = readFileSync(`${SHARED}/templates/tinyllama.jinja`, 'utf8');
    s = await startServer({ slots: 4, maxBatch: 16, chatTemplate: template });
    const openai = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 });
    const chatText = async (content: string, onDelta?: () => void) => {
      const stream = await openai.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content }], max_tokens: 50, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        onDelta?.();
      }
      return text;
    };
    const messagesText = async (content: string, onDelta?: () => void) => {
      const stream = anthropic.messages.stream({ model: 'stories260K', messages: [{ role: 'user', content }], max_tokens: 50, temperature: 0 });
      let text = '';
      stream.on('text', (t) => {
        text += t;
        onDelta?.();
      });
      await stream.finalMessage();
      return text;
    };
    const runs = [
      (d?: () => void) => chatText(PROMPTS[0]!, d),
      (d?: () => void) => messagesText(PROMPTS[1]!, d),
      (d?: () => void) => chatText(PROMPTS[2]!, d),
      (d?: () => void) => messagesText(PROMPTS[3]!, d),
    ];
    const alone: string[] = [];
    for (const r of runs) alone.push(await r());
    expect(alone.every((t) => t.length > 0)).toBe(true);

    const steps: number[] = [];
    const rt = s.runtime as unknown as { steps: { onStep: ((e: { rows: unknown[] }) => void) | null } };
    rt.steps.onStep = (e) => steps.push(e.rows.length);
    // The second starts once the first streams; the last two once the second does.
    let firstDeltas = 0;
    let secondDeltas = 0;
    let startSecond!: () => void;
    let startRest!: () => void;
    const secondGo = new Promise<void>((r) => (startSecond = r));
    const restGo = new Promise<void>((r) => (startRest = r));
    const together = await Promise.all([
      runs[0]!(() => ++firstDeltas === 3 && startSecond()),
      secondGo.then(() => runs[1]!(() => ++secondDeltas === 3 && startRest())),
      restGo.then(() => runs[2]!()),
      restGo.then(() => runs[3]!()),
    ]);
    expect(together).toEqual(alone);
    expect(Math.max(...steps)).toBe(4);
  });

  it('a flood beyond --max-queue gets 503 with Retry-After in each protocol\'s shape, while /health answers', async () => {
    const template = readFileSync(`${SHARED}/templates/tinyllama.jinja`, 'utf8');
    s = await startServer({ slots: 1, maxQueue: 2, chatTemplate: template, contextSize: 8192 });
    // A long generation holds the one slot (the end-of-sequence token masked), two wait, the rest are refused.
    const long = postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[0], max_tokens: 3000, temperature: 0, logit_bias: { 2: -100 } });
    await new Promise((r) => setTimeout(r, 50));
    const flood = await Promise.all(Array.from({ length: 8 }, (_, i) => postJson(`${s!.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[i % 4], max_tokens: 5, temperature: 0 })));
    const refused = flood.filter((r) => r.status === 503);
    expect(refused.length).toBe(6);
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect((await refused[0]!.json()).error).toMatchObject({ type: 'server_error', code: 'queue_full' });
    expect(flood.filter((r) => r.status === 200)).toHaveLength(8 - refused.length);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    // The Anthropic SDK sees the same refusal as its own error type.
    const hold = postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[1], max_tokens: 3000, temperature: 0, logit_bias: { 2: -100 } });
    const queued = [1, 2].map(() => postJson(`${s!.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[2], max_tokens: 3, temperature: 0 }));
    await new Promise((r) => setTimeout(r, 50));
    const anthropic = new Anthropic({ baseURL: s.url, apiKey: 'unused', maxRetries: 0 });
    const err = await anthropic.messages.create({ model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect(err).toMatchObject({ status: 503 });
    expect((err as InstanceType<typeof Anthropic.APIError>).headers?.get?.('retry-after') ?? (err as { headers: Record<string, string> }).headers['retry-after']).toBe('1');
    expect((err as { error: { type: string } }).error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    await Promise.all([long, hold, ...queued]);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(/kiln_time_to_first_token_seconds_count [1-9]/);
    expect(metrics).toMatch(/kiln_queue_wait_seconds_count [1-9]/);
    expect(metrics).toMatch(/kiln_inter_token_latency_seconds_bucket\{le="\+Inf"\} [1-9]/);
    expect(metrics).toContain('kiln_sequences_running 0');
    expect(metrics).toMatch(/kiln_kv_cache_used_ratio 0\.\d+/);
  });

  it('a disconnect cancels the generation within one decode step and frees the slot', async () => {
    const seen = { afterAbort: 0, finish: [] as string[] };
    // Counts the tokens the runtime still produces once the request's signal has fired.
    // A context far past the model's 512: the generation would run for thousands of tokens.
    s = await startServer({ slots: 1, contextSize: 8192 }, {}, (rt) => Object.create(rt, {
      complete: {
        value: async (o: CompleteOptions) => {
          const r = await rt.complete({ ...o, onToken: (t) => { if (o.signal?.aborted) seen.afterAbort++; o.onToken?.(t); } });
          seen.finish.push(r.finishReason);
          return r;
        },
      },
    }) as ServedRuntime);
    const res = await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[0], max_tokens: 100_000, temperature: 0, stream: true });
    const reader = res.body!.getReader();
    for (let i = 0; i < 3; i++) await reader.read();
    await reader.cancel();
    // The single slot is free again: the next request runs and completes.
    const next = await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPTS[1], max_tokens: 5, temperature: 0 });
    expect(next.status).toBe(200);
    expect(seen.finish).toEqual(['abort', 'length']);
    expect(seen.afterAbort).toBeLessThanOrEqual(1);
    expect(await (await fetch(`${s.url}/metrics`)).text()).toContain('kiln_requests_in_flight 0');
  });
});
