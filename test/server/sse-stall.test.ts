// A client that stops reading a stream: once the socket's buffer is full, the stream waits at most
// the stall timeout for it to drain, and never holds more than MAX_SSE_BUFFERED_BYTES for it; then
// the connection closes (which, in kiln serve, cancels the generation). Real sockets on loopback.
import Fastify from 'fastify';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MAX_SSE_BUFFERED_BYTES, SseStream } from '../../src/server/sse-stream.js';

async function streamingServer(frames: number, frameBytes: number, stallMs: number) {
  const app = Fastify();
  let closedAt = -1;
  let written = 0;
  app.get('/s', async (_req, reply) => {
    const sse = new SseStream(reply, stallMs);
    reply.raw.on('close', () => { closedAt = performance.now(); });
    const frame = `data: ${'x'.repeat(frameBytes)}\n\n`;
    for (let i = 0; i < frames && !reply.raw.destroyed; i++) {
      sse.write(frame);
      written += frame.length;
      // One frame per turn of the event loop, as tokens come.
      await new Promise((r) => setImmediate(r));
    }
    sse.end();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return { app, port, closedAt: () => closedAt, written: () => written };
}

function silentClient(port: number) {
  const sock = connect(port, '127.0.0.1');
  sock.write('GET /s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  // Read nothing: the kernel's buffers fill, then the server's.
  sock.pause();
  return sock;
}

describe('SseStream and a client that stops reading', () => {
  it('closes the connection once the client has read nothing for the stall timeout', async () => {
    const s = await streamingServer(100_000, 64 * 1024, 300);
    const sock = silentClient(s.port);
    const t0 = performance.now();
    while (s.closedAt() < 0 && performance.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
    expect(s.closedAt()).toBeGreaterThan(0);
    // It stopped writing long before all 6 GB: at the buffered bound or the stall timeout.
    expect(s.written()).toBeLessThan(2 * MAX_SSE_BUFFERED_BYTES + (64 << 20));
    sock.destroy();
    await s.app.close();
  });

  it('never holds more than MAX_SSE_BUFFERED_BYTES for a client that reads nothing', async () => {
    const s = await streamingServer(100_000, 1 << 20, 60_000);
    const sock = silentClient(s.port);
    const t0 = performance.now();
    while (s.closedAt() < 0 && performance.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 50));
    expect(s.closedAt()).toBeGreaterThan(0);
    expect(s.closedAt() - t0).toBeLessThan(15_000);
    sock.destroy();
    await s.app.close();
  });

  it('keeps streaming to a slow reader that keeps up within the timeout', async () => {
    const s = await streamingServer(200, 64 * 1024, 2000);
    const sock = connect(s.port, '127.0.0.1');
    sock.write('GET /s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    let got = 0;
    sock.on('data', (d: Buffer) => {
      got += d.length;
      // Read in bursts with pauses well under the timeout.
      sock.pause();
      setTimeout(() => sock.resume(), 5);
    });
    while (got < 200 * 64 * 1024) await new Promise((r) => setTimeout(r, 20));
    expect(got).toBeGreaterThanOrEqual(200 * 64 * 1024);
    sock.destroy();
    await s.app.close();
  });
});
