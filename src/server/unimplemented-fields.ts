// Request fields that change what the reply means and that kiln does not implement. Ignoring one
// would answer a different request than the one sent (a conversation kiln does not have, a
// moderation that never ran, a tool that was never offered), so each is refused with a 400 that
// names it. Fields that only tune cost, routing or caching (store, metadata, user, service_tier,
// prompt_cache_key, cache_control, stream_options, verbosity, prediction...) are accepted: real
// clients send them by default, and kiln's answer means the same without them.
import { InvalidArgumentError } from '../errors.js';
import { ThreadUnsupportedError } from './errors.js';
import type { Fields } from './fields.js';

function refuse(f: Fields, key: string, why: string): never {
  throw new InvalidArgumentError(`'${f.at(key)}' is not supported by this server: ${why}`, f.at(key));
}

/** Whether a field is sent with a value that asks for something (not absent, null, false or empty). */
function asks(f: Fields, key: string): boolean {
  const v = f.raw(key);
  return v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0);
}

export function refuseUnimplementedChatFields(f: Fields): void {
  if (asks(f, 'functions')) refuse(f, 'functions', 'legacy function calling. Declare the functions in `tools` (and choose with `tool_choice`).');
  if (typeof f.raw('function_call') === 'object') {
    refuse(f, 'function_call', 'legacy function calling. Declare the function in `tools` and name it in `tool_choice`.');
  }
  const modalities = f.raw('modalities');
  if (Array.isArray(modalities) && modalities.some((m) => m !== 'text')) refuse(f, 'modalities', 'this model writes text only; send ["text"] or leave it out.');
  if (asks(f, 'audio')) refuse(f, 'audio', 'this model writes text only; leave it out.');
  if (asks(f, 'web_search_options')) refuse(f, 'web_search_options', 'this server has no web search; leave it out.');
  if (asks(f, 'moderation')) refuse(f, 'moderation', 'this server runs no moderation; leave it out.');
}

export function refuseUnimplementedResponsesFields(f: Fields): void {
  if (asks(f, 'background')) refuse(f, 'background', 'responses run in the foreground here; leave it out.');
  if (asks(f, 'conversation')) {
    refuse(f, 'conversation', 'this server keeps no conversations. Continue with `previous_response_id`, or send the whole conversation in `input`.');
  }
  if (asks(f, 'prompt')) refuse(f, 'prompt', 'this server keeps no prompt templates; send the instructions and input themselves.');
  if (asks(f, 'context_management')) refuse(f, 'context_management', 'this server does not compact conversations; leave it out.');
  if (asks(f, 'moderation')) refuse(f, 'moderation', 'this server runs no moderation; leave it out.');
  if (f.raw('truncation') === 'auto') {
    refuse(f, 'truncation', 'this server never drops input items; leave it out (or send "disabled"): a conversation longer than the context is an error.');
  }
  const include = f.raw('include');
  if (Array.isArray(include) && include.includes('message.output_text.logprobs')) {
    refuse(f, 'include', '"message.output_text.logprobs": /v1/responses reports no log-probabilities here; use /v1/chat/completions with `logprobs`.');
  }
  const top = f.raw('top_logprobs');
  if (typeof top === 'number' && top > 0) refuse(f, 'top_logprobs', '/v1/responses reports no log-probabilities here; use /v1/chat/completions with `logprobs`.');
}

export function refuseUnimplementedAnthropicFields(f: Fields): void {
  if (f.has('thread')) throw new ThreadUnsupportedError();
  if (asks(f, 'container')) refuse(f, 'container', 'this server runs no code execution containers; leave it out.');
  if (asks(f, 'context_management')) refuse(f, 'context_management', 'this server does not edit the context; send the messages as they should be read.');
  if (asks(f, 'compaction')) refuse(f, 'compaction', 'this server does not compact conversations; leave it out.');
  if (asks(f, 'mcp_servers')) refuse(f, 'mcp_servers', 'this server connects to no MCP servers; run the tools on the client and declare them in `tools`.');
}
