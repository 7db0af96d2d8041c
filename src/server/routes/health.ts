// GET /health: liveness for load balancers and scripts; needs no API key. 503 while shutting down.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../server-context.js';

export function registerHealth(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/health', async (_request, reply) => {
    if (ctx.draining) return reply.code(503).send({ status: 'shutting_down' });
    return { status: 'ok', model: ctx.modelId, slots: ctx.runtime.info.slots, queue_depth: ctx.metrics.queueDepth };
  });
}
