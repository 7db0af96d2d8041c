// Tool-call ids on the Anthropic wire. Anthropic's tool_use ids start with `toolu_` (and clients
// may rely on it), while the chat layer mints OpenAI's `call_` + 24 alphanumerics (Mistral's 9
// alphanumerics for Mistral templates), and exact replay finds a recorded turn by those ids. So
// the ids are renamed at this protocol's edge, both ways: `call_X` goes out as `toolu_X` (the
// length of Anthropic's own ids) and a 9-character id as `toolu_` + it; an incoming id of either
// shape is read back as kiln minted it. Every other incoming id passes unchanged; tool_use and
// tool_result ids are renamed alike, so a conversation's calls and results still pair up.
const CALL = /^call_([A-Za-z0-9]{24})$/;
const TOOLU = /^toolu_([A-Za-z0-9]{24}|[A-Za-z0-9]{9})$/;

export function toAnthropicToolId(id: string): string {
  const m = CALL.exec(id);
  return 'toolu_' + (m === null ? id : m[1]!);
}

export function fromAnthropicToolId(id: string): string {
  const m = TOOLU.exec(id);
  if (m === null) return id;
  return m[1]!.length === 24 ? 'call_' + m[1]! : m[1]!;
}
