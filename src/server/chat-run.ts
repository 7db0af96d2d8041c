// The one adapter between a ChatRequest and runtime.chatStream(): the chat layer's events go to
// the sink unchanged (they are the tool-call streamer's events), its final event becomes `done`.
import type { GenerationRun } from './generation-reply.js';
import type { ChatRequest } from './chat-request.js';
import type { ServerContext } from './server-context.js';

export function chatRun(ctx: ServerContext, req: ChatRequest): GenerationRun {
  return async (sink, signal) => {
    const stream = ctx.runtime.chatStream({
      ...req.sampling,
      messages: req.messages,
      tools: req.tools,
      toolChoice: req.toolChoice,
      parallelToolCalls: req.parallelToolCalls,
      maxTokens: req.maxTokens,
      stop: req.stop,
      signal,
      ...(req.enableThinking !== undefined ? { enableThinking: req.enableThinking } : {}),
    });
    for await (const ev of stream) {
      if (ev.type === 'done') {
        return { done: { finishReason: ev.finishReason, usage: ev.usage }, timings: ev.timings };
      }
      if (ev.type === 'start') sink.start({ promptTokens: ev.promptTokens, cachedTokens: ev.cachedTokens });
      else sink.push(ev);
    }
    throw new Error('chatStream ended without a done event');
  };
}
