// kiln/tool-calls: final parsers for each tool-call format, the incremental streamer, and format
// detection from a chat template.
export { detectToolCallFormat } from './detect-tool-call-format.js';
export { IncrementalToolCallStreamer, type IncrementalToolCallStreamerOptions } from './incremental-tool-call-streamer.js';
export { parseToolCalls } from './parse-tool-calls.js';
export { promptEndsInReasoning } from './starts-in-reasoning.js';
export { mintCallId } from './call-id.js';
export { MAX_CALLS, MAX_HELD_CHARS, MAX_ID_BYTES, MAX_NAME_BYTES, MAX_PARAMETERS } from './limits.js';
export {
  TOOL_CALL_FORMATS,
  type OpenAITool,
  type ParsedToolCall,
  type ParsedToolCalls,
  type ParseToolCallsOptions,
  type ToolCallEvent,
  type ToolCallFormat,
  type ToolCallLogger,
} from './types.js';
