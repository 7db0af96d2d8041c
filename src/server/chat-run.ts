// The one adapter between a ChatRequest and runtime.chatStream(): the chat layer's `start` opens
// the sink, its reply events (the tool-call streamer's) go to the sink unchanged, and its final
// event becomes `done`.
import type { ChatStreamEvent } from '../runtime/chat.js';
import type { ChatRequest } from './chat-request.js';
import type { GenerationRun } from './generation-reply.js';
import type { ServerContext } from './server-context.js';

export function chatRun(ctx: ServerContext, req: ChatRequest): GenerationRun {
  return async (sink, signal) => {
    const events: AsyncIterable<ChatStreamEvent> = ctx.runtime.chatStream({
      ...req.sampling,
      messages: req.messages,
      tools: req.tools,
      toolChoice: req.toolChoice,
      parallelToolCalls: req.parallelToolCalls,
      maxTokens: req.maxTokens,
      stop: req.stop,
      signal,
      ...(req.enableThinking !== undefined ? { enableThinking: req.enableThinking } : {}),
      ...(req.logprobs !== undefined ? { logprobs: req.logprobs } : {}),
      ...(req.responseFormat !== undefined ? { responseFormat: req.responseFormat } : {}),
    });
    for await (const ev of events) {
      if (ev.type === 'start') {
        sink.start({ promptTokens: ev.promptTokens, cachedTokens: ev.cachedTokens });
        continue;
      }
      if (ev.type !== 'done') {
        sink.push(ev);
        continue;
      }
      const { finishReason, stopSequence, usage, timings } = ev.result;
      // tool_calls is decided by the encoders from what reached the client.
      return { done: { finishReason: finishReason === 'tool_calls' ? 'stop' : finishReason, stopSequence, usage }, timings };
    }
    throw new Error('chatStream ended without a done event');
  };
}
