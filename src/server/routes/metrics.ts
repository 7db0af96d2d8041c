// GET /metrics: Prometheus text exposition of the server's counters and gauges.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../server-context.js';

export function registerMetrics(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/metrics', async (_request, reply) => {
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(ctx.metrics.render());
  });
}
