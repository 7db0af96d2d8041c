// Chooses the tool-call format from a model's chat template, by the syntax the template teaches
// the model. Order matters: Qwen3-Coder's template also has `<tool_call>`, and Hermes' also says
// "parameters".
import type { ToolCallFormat } from './types.js';

export function detectToolCallFormat(chatTemplate: string): ToolCallFormat | null {
  if (typeof chatTemplate !== 'string') return null;
  if (chatTemplate.includes('<function=')) return 'qwen3_coder';
  if (chatTemplate.includes('<tool_call>')) return 'hermes';
  if (chatTemplate.includes('[TOOL_CALLS]')) return 'mistral';
  if (
    chatTemplate.includes('<|python_tag|>') ||
    (chatTemplate.includes('<|start_header_id|>') && (chatTemplate.includes('ipython') || chatTemplate.includes('"parameters"')))
  ) {
    return 'llama3_json';
  }
  return null;
}
