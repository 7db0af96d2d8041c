// POST /v1/chat/completions: OpenAI Chat Completions over the chat layer, streamed (tool calls as
// delta.tool_calls while they are generated) or not.
import type { FastifyInstance } from 'fastify';
import { InvalidArgumentError } from '../../errors.js';
import { type ChatRequest, MAX_STOP, readOpenAIMessages, readOpenAIToolChoice, readOpenAITools } from '../chat-request.js';
import { chatRun } from '../chat-run.js';
import { Fields } from '../fields.js';
import { collectGeneration, streamGeneration } from '../generation-reply.js';
import { mintId, unixSeconds } from '../ids.js';
import { OpenAIChatEncoder, openAIFinishReason, openAILogprobs, openAIUsage } from '../openai-chat-encoder.js';
import { MAX_TOP_LOGPROBS } from '../../sampling/token-logprobs.js';
import { ReplyAccumulator } from '../reply-accumulator.js';
import { readChatResponseFormat } from '../response-format.js';
import { openAISampling } from '../sampling-fields.js';
import type { ServerContext } from '../server-context.js';
import { refuseUnimplementedChatFields } from '../unimplemented-fields.js';

export function readChatCompletionRequest(f: Fields, ctx: ServerContext): ChatRequest {
  refuseUnimplementedChatFields(f);
  const messages = readOpenAIMessages(f);
  const tools = readOpenAITools(f);
  const toolChoice = readOpenAIToolChoice(f, tools);
  const limit = { min: 1, max: 2 ** 31 - 1, integer: true };
  const maxTokens = f.number('max_completion_tokens', limit) ?? f.number('max_tokens', limit) ?? ctx.runtime.info.contextSize;
  const n = f.number('n', { integer: true, min: 1 });
  if (n !== undefined && n !== 1) throw new InvalidArgumentError(`'n' must be 1: kiln returns one choice per request, got ${n}.`, 'n');
  const responseFormat = readChatResponseFormat(f);
  f.string('user');
  const req: ChatRequest = {
    messages,
    tools,
    toolChoice,
    parallelToolCalls: f.boolean('parallel_tool_calls') ?? true,
    maxTokens,
    stop: f.stringList('stop', { max: MAX_STOP }) ?? [],
    sampling: openAISampling(f, ctx.runtime.tokenizer.vocabSize),
  };
  // chat_template_kwargs is kiln's (and vLLM's) own switch; reasoning effort "none" asks for the same.
  const thinking = f.object('chat_template_kwargs')?.boolean('enable_thinking') ?? (f.string('reasoning_effort') === 'none' ? false : undefined);
  if (thinking !== undefined) req.enableThinking = thinking;
  const logprobs = f.boolean('logprobs') ?? false;
  const top = f.number('top_logprobs', { integer: true, min: 0, max: MAX_TOP_LOGPROBS });
  if (top !== undefined && !logprobs) throw new InvalidArgumentError(`'top_logprobs' needs 'logprobs': true.`, 'top_logprobs');
  if (logprobs) req.logprobs = top ?? 0;
  if (responseFormat !== undefined) req.responseFormat = responseFormat;
  return req;
}

export function registerChatCompletions(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const f = Fields.body(request.body);
    ctx.checkModel(f.string('model', { required: true }));
    const req = readChatCompletionRequest(f, ctx);
    const stream = f.boolean('stream') ?? false;
    const includeUsage = f.object('stream_options')?.boolean('include_usage') ?? false;
    const id = mintId('chatcmpl-');
    const created = unixSeconds();
    const run = chatRun(ctx, req);
    if (stream) {
      await streamGeneration(ctx, reply, 'openai', new OpenAIChatEncoder({ id, model: ctx.modelId, created, includeUsage }), run);
      return;
    }
    const acc = new ReplyAccumulator();
    const outcome = await collectGeneration(ctx, reply, run, (ev) => acc.push(ev));
    if (outcome === null) return;
    const calls = acc.toolCalls;
    const message: Record<string, unknown> = { role: 'assistant', content: calls.length > 0 && acc.content === '' ? null : acc.content, refusal: null };
    if (acc.reasoning !== '') message.reasoning_content = acc.reasoning;
    if (calls.length > 0) {
      message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
    }
    return {
      id,
      object: 'chat.completion',
      created,
      model: ctx.modelId,
      system_fingerprint: null,
      choices: [{
        index: 0, message, logprobs: req.logprobs === undefined ? null : openAILogprobs(acc.logprobs), finish_reason: openAIFinishReason(outcome.done, calls.length),
      }],
      usage: openAIUsage(outcome.done.usage),
    };
  });
}
