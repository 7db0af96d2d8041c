// kiln's public API.
export { QueueFullError, Runtime, RuntimeClosedError } from './runtime/runtime.js';
export type { LoadOptions, CompleteOptions, CompleteResult, RuntimeInfo } from './runtime/runtime.js';
export type { FinishReason, Usage, Timings, TokenLogprob, TokenLogprobAlternative } from './generate/generate.js';
export { ContextLengthExceededError } from './generate/errors.js';
export type { SamplingOptions } from './sampling/sampling-options.js';
export { KilnError, InvalidArgumentError, NativeAddonError } from './errors.js';
export * from './gguf/index.js';
export * from './model/errors.js';
export { loadTokenizer } from './tokenizer/load-tokenizer.js';
export type { Tokenizer } from './tokenizer/tokenizer.js';
export * from './tool-calls/index.js';
export type {
  ChatOptions, ChatResult, ChatStreamEvent, ChatFinishReason, ChatLogger, ExplainCacheOptions, ResponseFormat,
} from './runtime/chat.js';
export type { CacheExplanation, CacheDivergence } from './runtime/explain-cache.js';
export type { ChatMessage, ChatToolCall, ChatTextPart, ToolChoice, AssistantReply } from './chat/messages.js';
export { ChatTemplate, type RenderContext, type ChatTemplateOptions } from './chat/chat-template.js';
export { ChatTemplateError, ChatTemplateSyntaxError, NoChatTemplateError } from './chat/errors.js';
export { ReplayCache, type ReplayCacheOptions, type ReplayRecord } from './chat/replay-cache.js';
export { convertHfModel, type ConvertOptions, type ConvertProgress, type ConvertResult } from './convert/convert-model.js';
export * from './convert/errors.js';
export { compileGrammar, GrammarMatcher, GrammarError, UnsupportedSchemaError, type GrammarSpec, type JsonSchemaOptions } from './grammar/index.js';
