// JSON string-body escaping for arguments kiln builds itself (qwen3_coder values). Escapes what
// JSON requires and leaves everything else, non-ASCII included, as the model wrote it, the way
// Python's json.dumps(ensure_ascii=False) does; lone surrogates become \uXXXX like JSON.stringify.

export function escapeJsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 32 || c === 34 || c === 92 || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(s).slice(1, -1);
  }
  return s;
}
