// POST /v1/responses: OpenAI Responses over the chat layer, streamed or not; responses are stored
// (store defaults to true) so a later request can continue with previous_response_id, and
// GET /v1/responses/:id returns a stored one.
import type { FastifyInstance } from 'fastify';
import type { ChatMessage } from '../../chat/messages.js';
import { chatRun } from '../chat-run.js';
import { ResponseNotFoundError } from '../errors.js';
import { Fields } from '../fields.js';
import { collectGeneration, streamGeneration } from '../generation-reply.js';
import { mintId, unixSeconds } from '../ids.js';
import { storedItems } from '../response-items.js';
import { type ResponseObject, ResponsesEncoder } from '../responses-encoder.js';
import { outputAsMessages, readResponsesRequest } from '../responses-request.js';
import type { ServerContext } from '../server-context.js';

export function registerResponses(app: FastifyInstance, ctx: ServerContext): void {
  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (request) => {
    const stored = ctx.store.get(request.params.id);
    if (stored === undefined) throw new ResponseNotFoundError(request.params.id);
    return stored.response;
  });

  app.post('/v1/responses', async (request, reply) => {
    const f = Fields.body(request.body);
    ctx.checkModel(f.string('model', { required: true }));
    const previousId = f.string('previous_response_id');
    let previous: ChatMessage[] = [];
    if (previousId !== undefined) {
      const stored = ctx.store.get(previousId);
      if (stored === undefined) throw new ResponseNotFoundError(previousId);
      previous = stored.conversation as ChatMessage[];
    }
    const { chat, conversation } = readResponsesRequest(
      f, previous, ctx.runtime.info.contextSize, ctx.runtime.tokenizer.vocabSize, storedItems(ctx.store),
    );
    const stream = f.boolean('stream') ?? false;
    const store = f.boolean('store') ?? true;
    const id = mintId('resp_');
    const response: ResponseObject = {
      id,
      object: 'response',
      created_at: unixSeconds(),
      status: 'in_progress',
      error: null,
      incomplete_details: null,
      instructions: f.string('instructions') ?? null,
      max_output_tokens: f.number('max_output_tokens') ?? null,
      model: ctx.modelId,
      output: [],
      parallel_tool_calls: chat.parallelToolCalls,
      previous_response_id: previousId ?? null,
      reasoning: { effort: null, summary: null },
      store,
      temperature: chat.sampling.temperature ?? 1,
      text: { format: { type: 'text' } },
      tool_choice: chat.toolChoice === 'auto' || chat.toolChoice === 'none' || chat.toolChoice === 'required'
        ? chat.toolChoice
        : { type: 'function', name: chat.toolChoice.function.name },
      tools: chat.tools.map((t) => ({ type: 'function', name: t.function.name, description: t.function.description ?? null, parameters: t.function.parameters ?? null, strict: false })),
      top_p: chat.sampling.topP ?? 1,
      truncation: 'disabled',
      usage: null,
      user: f.string('user') ?? null,
      metadata: f.metadata() ?? {},
    };
    const include = f.array('include') ?? [];
    const encoder = new ResponsesEncoder(response, ctx.logger, { requestId: id, sealReasoning: include.includes('reasoning.encrypted_content') });
    const run = chatRun(ctx, chat);
    const remember = () => {
      if (store && (response.status === 'completed' || response.status === 'incomplete')) {
        ctx.store.set(id, { response, conversation: [...conversation, ...outputAsMessages(response.output)] });
      }
    };
    if (stream) {
      await streamGeneration(ctx, reply, 'openai', encoder, run);
      remember();
      return;
    }
    const outcome = await collectGeneration(ctx, reply, run, (ev) => void encoder.push(ev));
    if (outcome === null) return;
    encoder.finish(outcome.done);
    remember();
    return response;
  });
}
