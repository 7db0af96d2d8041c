// The tool-choice constraint on a character-level "tokenizer" (one token per UTF-16 unit): which
// tokens it allows at each step, when it waits for thinking to end, and when it lets go.
import { describe, expect, it } from 'vitest';
import { ToolChoiceConstraint, type ToolChoiceConstraintOptions } from '../../../src/chat/tool-choice-constraint.js';

const encode = (text: string) => Array.from(text, (c) => c.charCodeAt(0));
const VOCAB = 0x10000;
const idsOf = (mask: Uint32Array | null): number[] | null => {
  if (mask === null) return null;
  const ids: number[] = [];
  for (let id = 0; id < VOCAB; id++) if ((mask[id >>> 5]! >>> (id & 31)) & 1) ids.push(id);
  return ids;
};
const chars = (mask: Uint32Array | null) => idsOf(mask)?.map((id) => String.fromCharCode(id)).sort().join('') ?? null;

function constraint(opts: Partial<ToolChoiceConstraintOptions> = {}): ToolChoiceConstraint {
  return new ToolChoiceConstraint({ format: 'hermes', names: ['get_weather', 'get_time', 'search'], chatTemplate: '', vocabSize: VOCAB, encode, startsInReasoning: false, mayThink: false, ...opts });
}

/** Feeds `text` one character at a time as the model's choice; returns what was allowed before each. */
function write(c: ToolChoiceConstraint, text: string): (string | null)[] {
  return Array.from(text, (ch) => {
    const allowed = chars(c.allowed());
    c.accept(ch.charCodeAt(0), ch);
    return allowed;
  });
}

describe('ToolChoiceConstraint', () => {
  it('forces the shared opening, offers the declared names where they differ, and lets go where the arguments begin', () => {
    const c = constraint();
    const steps = write(c, '<tool_call>\n{"name": "get_time", "arguments": ');
    const opening = '<tool_call>\n{"name": "';
    expect(steps.slice(0, opening.length)).toEqual(Array.from(opening));
    expect(steps[opening.length]).toBe('gs');
    expect(steps.slice(opening.length + 1, opening.length + 4)).toEqual(['e', 't', '_']);
    expect(steps[opening.length + 4]).toBe('tw');
    expect(c.allowed()).toBeNull();
    expect(write(c, '{"tz": 1}}')).toEqual(Array(10).fill(null));
  });

  it('a named choice forces the whole opening', () => {
    const c = constraint({ names: ['search'] });
    const opening = '<tool_call>\n{"name": "search", "arguments": ';
    expect(write(c, opening)).toEqual(Array.from(opening));
    expect(c.allowed()).toBeNull();
  });

  it('escapes a name as JSON text', () => {
    const c = constraint({ names: ['say "hi"'] });
    const opening = '<tool_call>\n{"name": "say \\"hi\\"", "arguments": ';
    expect(write(c, opening)).toEqual(Array.from(opening));
  });

  it('inside reasoning waits for </think>, even split across pieces, then allows the blank lines models write', () => {
    const c = constraint({ names: ['search'], startsInReasoning: true });
    for (const piece of ['Let me ', 'look it up. <', '/thi', 'nk>']) {
      expect(c.allowed()).toBeNull();
      c.accept(1, piece);
    }
    expect(chars(c.allowed())).toBe('\n<');
    c.accept(10, '\n');
    expect(chars(c.allowed())).toBe('\n<');
    c.accept(10, '\n');
    expect(chars(c.allowed())).toBe('<');
  });

  it('lets a thinking model open <think> first, then forces the call after it', () => {
    const c = constraint({ names: ['search'], mayThink: true });
    expect(write(c, '<')).toEqual(['<']);
    expect(chars(c.allowed())).toBe('t');
    write(c, 'think>');
    expect(c.allowed()).toBeNull();
    c.accept(1, 'hmm</think>');
    expect(chars(c.allowed())).toBe('\n<');
    // Without mayThink, `<think>` is not an option.
    const plain = constraint({ names: ['search'] });
    write(plain, '<');
    expect(chars(plain.allowed())).toBe('t');
    write(plain, 't');
    expect(chars(plain.allowed())).toBe('o');
  });

  it('stands down when a token it did not offer is emitted (forcedTokens)', () => {
    const c = constraint();
    c.accept('H'.charCodeAt(0), 'H');
    expect(c.allowed()).toBeNull();
    c.accept('<'.charCodeAt(0), '<');
    expect(c.allowed()).toBeNull();
  });

  it('spells each format as its templates teach it', () => {
    const first = (opts: Partial<ToolChoiceConstraintOptions>) => {
      const c = constraint({ names: ['f'], ...opts });
      let text = '';
      for (let allowed = idsOf(c.allowed()); allowed !== null && allowed.length === 1; allowed = idsOf(c.allowed())) {
        text += String.fromCharCode(allowed[0]!);
        c.accept(allowed[0]!, '');
      }
      return { text, next: chars(c.allowed()) };
    };
    expect(first({ format: 'qwen3_coder' })).toEqual({ text: '<tool_call>\n<function=f>\n', next: null });
    expect(first({ format: 'llama3_json' })).toEqual({ text: '{"name": "f", "parameters": ', next: null });
    expect(first({ format: 'mistral', chatTemplate: '{{- "[TOOL_CALLS][" }}' })).toEqual({ text: '[TOOL_CALLS][{"name": "f", "arguments": ', next: null });
    // The name form: the model picks [ARGS] or [CALL_ID] after the name.
    expect(first({ format: 'mistral', chatTemplate: "{{- '[TOOL_CALLS]' + name }}" })).toEqual({ text: '[TOOL_CALLS]f[', next: 'AC' });
  });

  it('needs at least one tool', () => {
    expect(() => constraint({ names: [] })).toThrow(RangeError);
  });
});
