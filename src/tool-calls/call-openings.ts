// How a call to a given tool begins in each format, up to where its arguments begin: the text a
// required or named tool choice forces at the start of the answer (see ToolChoiceConstraint).
// Spelled the way the chat templates teach the models, so the forced text is what the model itself
// would write there.
import type { ToolCallFormat } from './types.js';

/**
 * The texts a call to `name` may open with, one per spelling the format allows (the model picks).
 * `chatTemplate` decides Mistral's spelling: the list form where the template writes
 * `[TOOL_CALLS][`, else the name form with `[ARGS]` or `[CALL_ID]` after the name.
 */
export function callOpenings(format: ToolCallFormat, name: string, chatTemplate: string): string[] {
  const json = JSON.stringify(name);
  switch (format) {
    case 'hermes':
      return [`<tool_call>\n{"name": ${json}, "arguments": `];
    case 'qwen3_coder':
      return [`<tool_call>\n<function=${name}>\n`];
    case 'llama3_json':
      return [`{"name": ${json}, "parameters": `];
    case 'mistral':
      return chatTemplate.includes('[TOOL_CALLS][')
        ? [`[TOOL_CALLS][{"name": ${json}, "arguments": `]
        : [`[TOOL_CALLS]${name}[ARGS]`, `[TOOL_CALLS]${name}[CALL_ID]`];
  }
}
