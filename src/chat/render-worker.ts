// The worker thread that renders chat templates away from the event loop (see render-thread.ts):
// templates are parsed once per source and rendered under the same limits as on the main thread.
import { parentPort } from 'node:worker_threads';
import { ChatTemplate, type ChatTemplateOptions, type RenderContext } from './chat-template.js';
import { ChatTemplateError } from './errors.js';
import { TemplateLimitError } from './template-limits.js';

export interface RenderJob {
  id: number;
  source: string;
  options: ChatTemplateOptions;
  /** Each context's `now` travels as milliseconds since the epoch. */
  contexts: Array<Omit<RenderContext, 'now'> & { now: number }>;
}

/** One context's rendering, or what stopped it. */
export type RenderOutcome =
  | { text: string }
  | { limit: string; detail: string }
  | { templateMessage: string; raised: boolean };

export interface RenderReply { id: number; outcomes?: RenderOutcome[]; failure?: string }

/** Parsed templates by source; a server renders one or two. */
const templates = new Map<string, ChatTemplate>();
const MAX_TEMPLATES = 8;

function templateFor(source: string, options: ChatTemplateOptions): ChatTemplate {
  let t = templates.get(source);
  if (t === undefined) {
    if (templates.size >= MAX_TEMPLATES) templates.clear();
    t = new ChatTemplate(source, options);
    templates.set(source, t);
  }
  return t;
}

function outcome(t: ChatTemplate, ctx: RenderJob['contexts'][number]): RenderOutcome {
  try {
    return { text: t.render({ ...ctx, now: new Date(ctx.now) }) };
  } catch (e) {
    if (e instanceof TemplateLimitError) return { limit: e.limit, detail: e.detail };
    if (e instanceof ChatTemplateError) return { templateMessage: e.templateMessage, raised: e.raisedByTemplate };
    return { templateMessage: e instanceof Error ? e.message : String(e), raised: false };
  }
}

parentPort?.on('message', (job: RenderJob) => {
  let reply: RenderReply;
  try {
    const t = templateFor(job.source, job.options);
    reply = { id: job.id, outcomes: job.contexts.map((ctx) => outcome(t, ctx)) };
  } catch (e) {
    reply = { id: job.id, failure: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
