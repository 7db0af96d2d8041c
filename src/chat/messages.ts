// The OpenAI chat shapes kiln accepts: messages, tool calls, tools and tool choice.
import type { OpenAITool } from '../tool-calls/index.js';

export type { OpenAITool };

export interface ChatTextPart {
  type: 'text';
  text: string;
}

export interface ChatToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text, as OpenAI sends it; an object is accepted too. */
  function: { name: string; arguments: string | Record<string, unknown> };
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ChatTextPart[] | null;
  name?: string;
  /** Assistant messages. */
  tool_calls?: ChatToolCall[] | null;
  /** Assistant messages: the thinking that came with the turn (either spelling). */
  reasoning_content?: string | null;
  reasoning?: string | null;
  /** Tool messages: the call this result answers. */
  tool_call_id?: string;
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** The assistant message kiln returns. */
export interface AssistantReply {
  role: 'assistant';
  content: string;
  /** Thinking, when the model produced any. */
  reasoning?: string;
  toolCalls?: ChatToolCall[];
}
