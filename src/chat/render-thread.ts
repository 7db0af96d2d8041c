// Renders chat templates on a worker thread, so a long conversation or a hostile template never
// holds the event loop (other streams keep streaming while it renders). One worker per process,
// started on first use and keeping the process alive only while it has work. The worker renders under the usual
// limits; as a backstop it is terminated when a job outlives MAX_TEMPLATE_MS by RENDER_GRACE_MS or
// its heap passes RENDER_HEAP_MB, and the next job starts a fresh one.
//
// The worker runs compiled JavaScript: dist/src/chat/render-worker.js next to this file once built,
// or the build's copy when this file runs from its TypeScript source (the tests); without one,
// renderThreadAvailable() is false and callers render on the main thread.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ChatTemplate, RenderContext } from './chat-template.js';
import { ChatTemplateError } from './errors.js';
import type { RenderJob, RenderReply } from './render-worker.js';
import { MAX_TEMPLATE_MS, TemplateLimitError } from './template-limits.js';

/** How long past MAX_TEMPLATE_MS a job may take before its worker is terminated. */
export const RENDER_GRACE_MS = 2_000;
/** The worker's heap: a template that builds more fails its render, not the process. */
export const RENDER_HEAP_MB = 1024;

interface Pending {
  resolve: (outcomes: Array<string | Error>) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const WORKER_PATH = ((): string | null => {
  for (const rel of ['./render-worker.js', '../../dist/src/chat/render-worker.js']) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  return null;
})();

export function renderThreadAvailable(): boolean {
  return WORKER_PATH !== null;
}

class RenderThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  /** Renders each context with `template`; a context the template refuses or that passes a limit gives its error. */
  render(template: ChatTemplate, contexts: RenderContext[]): Promise<Array<string | Error>> {
    const worker = this.start();
    const id = ++this.nextId;
    const job: RenderJob = {
      id,
      source: template.source,
      options: template.renderOptions,
      contexts: contexts.map((c) => ({ ...c, now: (c.now ?? new Date()).getTime() })),
    };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new TemplateLimitError('MAX_TEMPLATE_MS', `${MAX_TEMPLATE_MS} ms`)), MAX_TEMPLATE_MS + RENDER_GRACE_MS);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      // Held while it has work (an awaited render must not let the process exit), let go when idle.
      worker.ref();
      worker.postMessage(job);
    });
  }

  private start(): Worker {
    if (this.worker !== null) return this.worker;
    // None of the process's own Node flags: some (--input-type, --eval) stop a worker from starting.
    const worker = new Worker(WORKER_PATH!, { execArgv: [], resourceLimits: { maxOldGenerationSizeMb: RENDER_HEAP_MB } });
    worker.on('message', (reply: RenderReply) => this.settle(reply));
    // Both only for the current worker: one already failed (its job past MAX_TEMPLATE_MS, say) can
    // still report running out of heap while it is terminated, and that must not fail the next
    // job, which a fresh worker has taken.
    worker.on('error', (err: Error & { code?: string }) => {
      if (this.worker !== worker) return;
      this.fail(err.code === 'ERR_WORKER_OUT_OF_MEMORY'
        ? new TemplateLimitError('the render thread\'s memory', `${RENDER_HEAP_MB} MB`)
        : new TemplateLimitError('the render thread', err.message));
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.fail(new TemplateLimitError('the render thread', 'it stopped'));
    });
    // After the listeners (adding a 'message' listener refs the worker's port): idle until a job comes.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settle(reply: RenderReply): void {
    const p = this.pending.get(reply.id);
    if (p === undefined) return;
    this.pending.delete(reply.id);
    clearTimeout(p.timer);
    if (this.pending.size === 0) this.worker?.unref();
    if (reply.failure !== undefined) return p.reject(new TemplateLimitError('the render thread', reply.failure));
    p.resolve(reply.outcomes!.map((o) => ('text' in o ? o.text
      : 'limit' in o ? new TemplateLimitError(o.limit, o.detail)
        : new ChatTemplateError(o.templateMessage, o.raised))));
  }

  /** Stops the worker and fails every job in flight with `err`; the next job starts a new worker. */
  private fail(err: Error): void {
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) void worker.terminate();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }
}

/** The process's render thread. */
export const renderThread = new RenderThread();
