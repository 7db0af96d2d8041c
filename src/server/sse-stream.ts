// The socket end of the streaming chain. Headers go out with the first frames, so a failure before
// any output is still an ordinary JSON error with its status; frames are written as they come;
// end() (called in a finally) closes the stream once. Writes after the client has gone are dropped.
//
// Frames written during one turn of the event loop leave together, in one socket write, once the
// turn's promise jobs have run (process.nextTick): a token's frame costs the generation loop only
// a string append, and the write itself happens after the loop has handed the next forward step to
// the backend's thread, so the syscall overlaps the model's compute instead of delaying it.
//
// A client that stops reading is not waited for forever: once the socket's buffer is full, the
// client must take some of it within SSE_STALL_TIMEOUT_MS, and the buffer may not grow past
// MAX_SSE_BUFFERED_BYTES; otherwise the connection is closed, which cancels the generation.
import type { FastifyReply } from 'fastify';

/** How long a stream waits for a client that reads nothing while frames are waiting. */
export const SSE_STALL_TIMEOUT_MS = 30_000;
/** Frames held for a client that reads slower than the model writes. */
export const MAX_SSE_BUFFERED_BYTES = 16 << 20;

export class SseStream {
  private opened = false;
  private ended = false;
  private pending = '';
  private scheduled = false;
  private stallTimer: NodeJS.Timeout | null = null;
  private readonly flush = () => {
    this.scheduled = false;
    const frames = this.pending;
    this.pending = '';
    const res = this.reply.raw;
    if (frames.length === 0 || this.ended || res.destroyed || res.writableEnded) return;
    if (!res.write(frames)) this.watchStall();
  };

  constructor(private readonly reply: FastifyReply, private readonly stallTimeoutMs = SSE_STALL_TIMEOUT_MS) {}

  /** The socket's buffer is full: the client must drain some of it in time, and not let it grow without end. */
  private watchStall(): void {
    const res = this.reply.raw;
    if (res.writableLength > MAX_SSE_BUFFERED_BYTES) {
      res.destroy();
      return;
    }
    if (this.stallTimer !== null) return;
    const clear = () => {
      if (this.stallTimer !== null) clearTimeout(this.stallTimer);
      this.stallTimer = null;
      res.off('drain', clear);
      res.off('close', clear);
    };
    this.stallTimer = setTimeout(() => {
      clear();
      res.destroy();
    }, this.stallTimeoutMs);
    this.stallTimer.unref();
    res.once('drain', clear);
    res.once('close', clear);
  }

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
