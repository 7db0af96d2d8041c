// POST /v1/completions: OpenAI's (legacy) text completion on a raw prompt, streamed or not.
import type { FastifyInstance } from 'fastify';
import { InvalidArgumentError } from '../../errors.js';
import { ContextLengthExceededError } from '../../generate/errors.js';
import { MAX_STOP } from '../chat-request.js';
import { Fields, invalid } from '../fields.js';
import { collectGeneration, streamGeneration, type GenerationRun } from '../generation-reply.js';
import { mintId, unixSeconds } from '../ids.js';
import { completionLogprobs, OpenAICompletionEncoder } from '../openai-completion-encoder.js';
import type { TokenLogprob } from '../../generate/generate.js';
import { MAX_TOP_LOGPROBS } from '../../sampling/token-logprobs.js';
import { openAIUsage } from '../openai-chat-encoder.js';
import { openAISampling } from '../sampling-fields.js';
import type { ServerContext } from '../server-context.js';

/** OpenAI's default for this endpoint. */
const DEFAULT_MAX_TOKENS = 16;

export function registerCompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/completions', async (request, reply) => {
    const f = Fields.body(request.body);
    ctx.checkModel(f.string('model', { required: true }));
    const rt = ctx.runtime;
    const prompt = readPrompt(f, rt.tokenizer.vocabSize);
    const maxTokens = f.number('max_tokens', { min: 0, max: 2 ** 31 - 1, integer: true }) ?? DEFAULT_MAX_TOKENS;
    const stop = f.stringList('stop', { max: MAX_STOP }) ?? [];
    const sampling = openAISampling(f, rt.tokenizer.vocabSize);
    const stream = f.boolean('stream') ?? false;
    const includeUsage = f.object('stream_options')?.boolean('include_usage') ?? false;
    const echo = f.boolean('echo') ?? false;
    requireOne(f, 'n');
    requireOne(f, 'best_of');
    const logprobs = f.raw('logprobs') === false ? undefined : f.number('logprobs', { integer: true, min: 0, max: MAX_TOP_LOGPROBS });
    if (logprobs !== undefined && echo) {
      throw new InvalidArgumentError(`'echo' with 'logprobs' is not supported: kiln reports log-probabilities of generated tokens only.`, 'echo');
    }
    f.unsupported('suffix', (v) => v === '');
    f.string('user');

    const ids = typeof prompt === 'string' ? await rt.tokenizePrompt(prompt) : prompt;
    if (ids.length === 0 || ids.length > rt.info.contextSize) throw new ContextLengthExceededError(ids.length, rt.info.contextSize);
    const echoText = echo ? (typeof prompt === 'string' ? prompt : rt.detokenize(prompt)) : '';

    const run: GenerationRun = async (sink, signal) => {
      const r = await rt.complete({
        ...sampling, prompt: ids, maxTokens, stop, signal,
        onStart: (start) => {
          sink.start(start);
          if (echoText) sink.push({ type: 'content', text: echoText });
        },
        onToken: (text) => sink.push({ type: 'content', text }),
        ...(logprobs !== undefined ? { logprobs, onLogprob: (logprob) => sink.push({ type: 'logprob', logprob }) } : {}),
      });
      return { done: { finishReason: r.finishReason, stopSequence: r.stopSequence, usage: r.usage }, timings: r.timings };
    };

    const id = mintId('cmpl-');
    const created = unixSeconds();
    if (stream) {
      await streamGeneration(ctx, reply, 'openai', new OpenAICompletionEncoder({ id, model: ctx.modelId, created, includeUsage, textOffset: echoText.length }), run);
      return;
    }
    let text = '';
    const entries: TokenLogprob[] = [];
    const outcome = await collectGeneration(ctx, reply, run, (ev) => {
      if (ev.type === 'content') text += ev.text;
      if (ev.type === 'logprob') entries.push(ev.logprob);
    });
    if (outcome === null) return;
    return {
      id,
      object: 'text_completion',
      created,
      model: ctx.modelId,
      system_fingerprint: null,
      choices: [{
        text,
        index: 0,
        logprobs: logprobs === undefined ? null : completionLogprobs(entries, echoText.length).logprobs,
        finish_reason: outcome.done.finishReason === 'length' ? 'length' : 'stop',
      }],
      usage: openAIUsage(outcome.done.usage),
    };
  });
}

/** A string, a token-id array, or a one-element list of either (batches are n > 1, unsupported). */
function readPrompt(f: Fields, vocabSize: number): string | number[] {
  let v = f.raw('prompt');
  if (v === undefined) throw new InvalidArgumentError(`'prompt' is required: send a string or an array of token ids.`, 'prompt');
  if (Array.isArray(v) && v.length === 1 && (typeof v[0] === 'string' || Array.isArray(v[0]))) v = v[0];
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.every((t) => Number.isInteger(t) && t >= 0 && t < vocabSize)) return v as number[];
  throw invalid('prompt', `a string, or an array of token ids in [0, ${vocabSize}) (one prompt per request)`, v);
}

function requireOne(f: Fields, key: string): void {
  const n = f.number(key, { integer: true, min: 1 });
  if (n !== undefined && n !== 1) throw new InvalidArgumentError(`'${key}' must be 1: kiln returns one choice per request, got ${n}.`, key);
}
