// GET /v1/models and /v1/models/:id: the one served model, in OpenAI's shape, or Anthropic's when
// the request carries an `anthropic-version` header (both SDKs list models on the same path).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServerContext } from '../server-context.js';

export function registerModels(app: FastifyInstance, ctx: ServerContext): void {
  const describe = (request: FastifyRequest) => {
    if (request.headers['anthropic-version'] !== undefined) {
      return {
        type: 'model',
        id: ctx.modelId,
        display_name: ctx.runtime.info.name ?? ctx.modelId,
        created_at: new Date(ctx.modelCreated * 1000).toISOString(),
      };
    }
    return { id: ctx.modelId, object: 'model', created: ctx.modelCreated, owned_by: 'kiln' };
  };

  app.get('/v1/models', async (request) => {
    const model = describe(request);
    if (request.headers['anthropic-version'] !== undefined) {
      return { data: [model], has_more: false, first_id: ctx.modelId, last_id: ctx.modelId };
    }
    return { object: 'list', data: [model] };
  });

  app.get<{ Params: { id: string } }>('/v1/models/:id', async (request) => {
    ctx.checkModel(request.params.id);
    return describe(request);
  });
}
