// The socket end of the streaming chain. Headers go out with the first frames, so a failure before
// any output is still an ordinary JSON error with its status; frames are written as they come;
// end() (called in a finally) closes the stream once. Writes after the client has gone are dropped.
//
// Frames written during one turn of the event loop leave together, in one socket write, once the
// turn's promise jobs have run (process.nextTick): a token's frame costs the generation loop only
// a string append, and the write itself happens after the loop has handed the next forward step to
// the backend's thread, so the syscall overlaps the model's compute instead of delaying it.
import type { FastifyReply } from 'fastify';

export class SseStream {
  private opened = false;
  private ended = false;
  private pending = '';
  private scheduled = false;
  private readonly flush = () => {
    this.scheduled = false;
    const frames = this.pending;
    this.pending = '';
    const res = this.reply.raw;
    if (frames.length > 0 && !this.ended && !res.destroyed && !res.writableEnded) res.write(frames);
  };

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
    if (frames.length === 0 || this.ended) return;
    this.open();
    this.pending += frames;
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flush);
    }
  }

  end(): void {
    if (!this.opened || this.ended) return;
    this.flush();
    this.ended = true;
    const res = this.reply.raw;
    if (!res.destroyed && !res.writableEnded) res.end();
  }
}
