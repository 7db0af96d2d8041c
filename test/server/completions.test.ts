// /v1/completions on the real stories260K model through a real server: the official openai client
// and raw fetch get exactly what runtime.complete() gives directly.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Running, parseSse, postJson, startServer } from './helpers.js';

const PROMPT = 'Once upon a time';
let s: Running;
let direct: { text: string; pieces: string[] };

beforeAll(async () => {
  s = await startServer();
  const pieces: string[] = [];
  const r = await s.runtime.complete({ prompt: PROMPT, maxTokens: 40, temperature: 0, onToken: (t) => pieces.push(t) });
  direct = { text: r.text, pieces };
});
afterAll(async () => s?.close());

describe('/v1/completions', () => {
  it('matches runtime.complete() through the openai client, streamed and not', async () => {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' });
    const r = await client.completions.create({ model: 'stories260K', prompt: PROMPT, max_tokens: 40, temperature: 0 });
    expect(r.choices[0]!.text).toBe(direct.text);
    expect(r.choices[0]!.finish_reason).toBe('length');
    expect(r.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 40, total_tokens: 45 });

    const stream = await client.completions.create({
      model: 'stories260K', prompt: PROMPT, max_tokens: 40, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.text) pieces.push(c.text);
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    // One chunk per piece of text the runtime emits: nothing held back, nothing merged.
    expect(pieces).toEqual(direct.pieces);
    expect(finish).toBe('length');
    expect(usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 4 } });
  });

  it('frames SSE exactly: data lines, blank-line separated, ending in [DONE]', async () => {
    const res = await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPT, max_tokens: 3, temperature: 0, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const body = await res.text();
    expect(body).toMatch(/^(data: \{[^\n]*\}\n\n)+data: \[DONE\]\n\n$/);
    const events = parseSse(body);
    expect(events.map((e) => e.event)).toEqual(events.map(() => null));
  });

  it('honours echo, stop and token-id prompts', async () => {
    const ids = s.runtime.tokenize(PROMPT);
    const byIds = await (await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: ids, max_tokens: 40, temperature: 0 })).json();
    expect(byIds.choices[0].text).toBe(direct.text);
    const echo = await (await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPT, max_tokens: 5, temperature: 0, echo: true })).json();
    expect(echo.choices[0].text.startsWith(PROMPT + direct.text.slice(0, 5))).toBe(true);
    const stop = direct.text.slice(12, 18);
    const stopped = await (await postJson(`${s.url}/v1/completions`, { model: 'stories260K', prompt: PROMPT, max_tokens: 40, temperature: 0, stop })).json();
    expect(stopped.choices[0]).toMatchObject({ text: direct.text.slice(0, direct.text.indexOf(stop)), finish_reason: 'stop' });
  });

  it('reports logprobs: one entry per generated token, the greedy token first among the alternatives, streamed and not', async () => {
    const body = { model: 'stories260K', prompt: PROMPT, max_tokens: 12, temperature: 0, logprobs: 3 };
    const r = await (await postJson(`${s.url}/v1/completions`, body)).json();
    const lp = r.choices[0].logprobs;
    expect(lp.tokens).toHaveLength(12);
    expect(lp.tokens.join('')).toBe(r.choices[0].text);
    expect(lp.text_offset).toEqual(lp.tokens.map((_: string, i: number) => lp.tokens.slice(0, i).join('').length));
    lp.tokens.forEach((token: string, i: number) => {
      const alternatives = Object.entries(lp.top_logprobs[i] as Record<string, number>);
      expect(alternatives.length).toBeLessThanOrEqual(3);
      // Greedy: the sampled token is the model's most likely one.
      expect(alternatives[0]).toEqual([token, lp.token_logprobs[i]]);
      expect(lp.token_logprobs[i]).toBeLessThanOrEqual(0);
    });

    const events = parseSse(await (await postJson(`${s.url}/v1/completions`, { ...body, stream: true })).text()).filter((e) => e.data !== '[DONE]');
    const streamed = events.map((e) => JSON.parse(e.data).choices[0]?.logprobs).filter((x) => x !== null && x !== undefined);
    expect(streamed.flatMap((x) => x.tokens)).toEqual(lp.tokens);
    expect(streamed.flatMap((x) => x.token_logprobs)).toEqual(lp.token_logprobs);
    expect(streamed.flatMap((x) => x.text_offset)).toEqual(lp.text_offset);

    const plain = await (await postJson(`${s.url}/v1/completions`, { ...body, logprobs: undefined })).json();
    expect(plain.choices[0].logprobs).toBeNull();
  });

  it('reproduces a seeded sample', async () => {
    const body = { model: 'stories260K', prompt: PROMPT, max_tokens: 30, temperature: 0.9, seed: 7 };
    const a = await (await postJson(`${s.url}/v1/completions`, body)).json();
    const b = await (await postJson(`${s.url}/v1/completions`, body)).json();
    const r = await s.runtime.complete({ prompt: PROMPT, maxTokens: 30, temperature: 0.9, seed: 7 });
    expect(a.choices[0].text).toBe(r.text);
    expect(b.choices[0].text).toBe(r.text);
  });
});
