// POST /v1/messages: Anthropic Messages over the chat layer, streamed (tool_use blocks released
// as soon as each call is confirmed) or not.
import type { FastifyInstance } from 'fastify';
import { AnthropicMessagesEncoder, anthropicUsage } from '../anthropic-messages-encoder.js';
import { readAnthropicRequest } from '../anthropic-request.js';
import { chatRun } from '../chat-run.js';
import { Fields } from '../fields.js';
import { collectGeneration, streamGeneration } from '../generation-reply.js';
import { mintId } from '../ids.js';
import type { ServerContext } from '../server-context.js';

export function registerMessages(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/messages', async (request, reply) => {
    const f = Fields.body(request.body);
    ctx.checkModel(f.string('model', { required: true }));
    const req = readAnthropicRequest(f);
    const stream = f.boolean('stream') ?? false;
    const id = mintId('msg_');
    const omitThinking = f.object('thinking')?.oneOf('display', ['summarized', 'omitted']) === 'omitted';
    const encoder = new AnthropicMessagesEncoder({ id, model: ctx.modelId, logger: ctx.logger, requestId: id, omitThinking });
    const run = chatRun(ctx, req);
    if (stream) {
      await streamGeneration(ctx, reply, 'anthropic', encoder, run);
      return;
    }
    // The non-streaming body is what the streaming encoder records: one definition of the blocks.
    const outcome = await collectGeneration(ctx, reply, run, (ev) => void encoder.push(ev));
    if (outcome === null) return;
    const usage = outcome.done.usage;
    const start = { promptTokens: usage.promptTokens, cachedTokens: usage.cachedTokens };
    encoder.open(start);
    encoder.finish(outcome.done);
    const { content, stopReason, stopSequence } = encoder.result;
    return {
      id,
      type: 'message',
      role: 'assistant',
      model: ctx.modelId,
      content,
      stop_reason: stopReason,
      stop_sequence: stopSequence,
      usage: anthropicUsage(start, usage.completionTokens),
    };
  });
}
