// The public shapes of kiln's tool-call layer: formats, declared tools, parse results and the
// events the incremental streamer sends.

/** How a model writes tool calls; chosen from the chat template (see detectToolCallFormat). */
export type ToolCallFormat = 'hermes' | 'mistral' | 'llama3_json' | 'qwen3_coder';

export const TOOL_CALL_FORMATS: readonly ToolCallFormat[] = ['hermes', 'mistral', 'llama3_json', 'qwen3_coder'];

/** A tool as an OpenAI request declares it. */
export interface OpenAITool {
  type: 'function';
  function: {
    name: string;
    description?: string;
    /** JSON schema of the arguments object. */
    parameters?: Record<string, unknown>;
    /** Constrain every call to this tool to its schema, from where its arguments begin. */
    strict?: boolean;
  };
}

export interface ParsedToolCall {
  id: string;
  name: string;
  /** The arguments object as JSON text: the model's own text (qwen3_coder: built from typed values). */
  arguments: string;
}

export interface ParsedToolCalls {
  /** Every character outside tool-call spans and thinking, in order. */
  content: string;
  /** The text of thinking blocks, markers removed. */
  reasoning: string;
  calls: ParsedToolCall[];
}

export type ToolCallEvent =
  | { type: 'content'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call_start'; index: number; id: string; name: string }
  | { type: 'tool_call_arguments'; index: number; delta: string }
  /** The call is complete and confirmed; its arguments are final. */
  | { type: 'tool_call_end'; index: number };

export interface ToolCallLogger {
  warn(msg: string, fields?: object): void;
  error(msg: string, fields?: object): void;
}

export interface ParseToolCallsOptions {
  format: ToolCallFormat;
  tools: readonly OpenAITool[];
  /**
   * True when the prompt left a `<think>` open, so the output begins inside reasoning. Left out,
   * the parser decides from the text: a `</think>` with no opener before it means the output
   * began inside reasoning.
   */
  startsInReasoning?: boolean;
  /** Makes call ids; tests pass a deterministic one. Default: random (see mintCallId). */
  mintId?: (format: ToolCallFormat) => string;
}
