// The socket end of the streaming chain. Headers go out with the first frames, so a failure before
// any output is still an ordinary JSON error with its status; frames are written as they come;
// end() (called in a finally) closes the stream once. Writes after the client has gone are dropped.
import type { FastifyReply } from 'fastify';

export class SseStream {
  private opened = false;
  private ended = false;

  constructor(private readonly reply: FastifyReply) {}

  get isOpen(): boolean {
    return this.opened;
  }

  /**
   * Sets the status line and headers; they leave with the first frames (one write, not two).
   * From here on errors go in-stream.
   */
  open(): void {
    if (this.opened) return;
    this.opened = true;
    this.reply.hijack();
    const res = this.reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      // Tells reverse proxies (nginx) not to buffer the stream.
      'x-accel-buffering': 'no',
    });
  }

  write(frames: string): void {
    if (frames.length === 0) return;
    this.open();
    const res = this.reply.raw;
    if (!this.ended && !res.destroyed && !res.writableEnded) res.write(frames);
  }

  end(): void {
    if (!this.opened || this.ended) return;
    this.ended = true;
    const res = this.reply.raw;
    if (!res.destroyed && !res.writableEnded) res.end();
  }
}
