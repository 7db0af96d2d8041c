// Concurrency on the real model: N concurrent requests at temperature 0 give the text each gives
// alone (with and without queueing), and a client that disconnects cancels its generation within
// one decode step and frees its slot.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
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
