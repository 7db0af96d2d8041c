// Special token ids, the add-BOS/EOS flags and the chat template, read from tokenizer.json,
// tokenizer_config.json and config.json in the order and with the precedence of gguf-py's
// SpecialVocab: the first source to name a token wins.
import type { HfTokenizerJson } from './tokenizer-json.js';
import { isRecord } from './read-file.js';

export const SPECIAL_TOKEN_TYPES = ['bos', 'eos', 'unk', 'sep', 'pad', 'cls', 'mask', 'eot'] as const;
export type SpecialTokenType = (typeof SPECIAL_TOKEN_TYPES)[number];

/** The flags GGUF has keys for. */
export type AddTokenType = 'bos' | 'eos' | 'sep';

export type ChatTemplate = string | Array<{ name: string; template: string }>;

export interface SpecialTokens {
  ids: Partial<Record<SpecialTokenType, number>>;
  add: Partial<Record<AddTokenType, boolean>>;
  chatTemplate: ChatTemplate | null;
}

export interface SpecialTokenSources {
  tokenizerJson: HfTokenizerJson | null;
  tokenizerConfig: Record<string, unknown> | null;
  config: Record<string, unknown>;
  /** Read after config.json (an addition to the script: some models name EOS only there). */
  generationConfig: Record<string, unknown> | null;
  /** chat_template.jinja, and the chat_template of chat_template.json: used when tokenizer_config.json has none. */
  chatTemplateFile: ChatTemplate | null;
  /** Ids at or past this are ignored (SentencePiece vocabularies); null: no bound. */
  nVocab: number | null;
}

export function readSpecialTokens(src: SpecialTokenSources): SpecialTokens {
  const out: SpecialTokens = { ids: {}, add: {}, chatTemplate: null };
  const set = (type: SpecialTokenType, id: unknown): void => {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return;
    if (src.nVocab !== null && id >= src.nVocab) return;
    if (out.ids[type] === undefined) out.ids[type] = id;
  };
  // A working copy: the post-processor rules below rename entries, as the script does.
  const tc = src.tokenizerConfig === null ? null : { ...src.tokenizerConfig };
  const types: SpecialTokenType[] = ['bos', 'eos', 'unk', 'sep', 'pad', 'cls', 'mask'];

  if (src.tokenizerJson !== null) {
    let bos = tokenText(tc?.['bos_token']);
    const cls = tokenText(tc?.['cls_token']);
    let eos = tokenText(tc?.['eos_token']);
    if (bos === null && cls !== null && tc) tc['bos_token'] = bos = cls;
    const sep = tokenText(tc?.['sep_token']);
    if (eos === null && sep !== null && tc) tc['eos_token'] = eos = sep;
    // Which special tokens the post-processor's single-sequence template puts around the text.
    const post = src.tokenizerJson.post_processor;
    const processors = isRecord(post) ? (Array.isArray(post['processors']) ? post['processors'] : [post]) : [];
    for (const p of processors) {
      if (!isRecord(p)) continue;
      if (p['type'] === 'RobertaProcessing') {
        out.add.bos = true;
        out.add.eos = true;
        out.add.sep = true;
        continue;
      }
      if (p['type'] !== 'TemplateProcessing' || !Array.isArray(p['single']) || p['single'].length < 2) continue;
      const single = p['single'] as unknown[];
      const first = specialTokenId(single[0]);
      if (first !== null) {
        if (!tc) bos = first;
        out.add.bos = first === bos || first === cls;
      }
      const last = specialTokenId(single[single.length - 1]);
      if (last !== null) {
        if (!tc) {
          eos = last;
        } else if (last !== eos) {
          // The template ends with another token than EOS: it becomes EOS and the old one EOT.
          if (!types.includes('eot')) types.push('eot');
          tc['eot_token'] = eos;
          tc['eos_token'] = eos = last;
        }
        out.add.eos = last === eos;
      }
    }
  }

  if (tc !== null) {
    const template = tc['chat_template'] ?? src.chatTemplateFile;
    out.chatTemplate = isChatTemplate(template) ? template : null;
    const added = src.tokenizerJson?.added_tokens ?? [];
    for (const type of types) {
      const flag = tc[`add_${type}_token`];
      if (typeof flag === 'boolean' && (type === 'bos' || type === 'eos' || type === 'sep')) out.add[type] = flag;
      const text = tokenText(tc[`${type}_token`]);
      if (text !== null) set(type, added.find((t) => t.content === text)?.id);
    }
  }
  for (const type of types) set(type, src.config[`${type}_token_id`]);
  if (src.generationConfig !== null) {
    for (const type of types) {
      const v = src.generationConfig[`${type}_token_id`];
      set(type, Array.isArray(v) ? v[0] : v);
    }
  }
  return out;
}

/** A token named in tokenizer_config.json: a string, or an AddedToken object with its content. */
function tokenText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (isRecord(v) && typeof v['content'] === 'string') return v['content'];
  return null;
}

function specialTokenId(piece: unknown): string | null {
  if (!isRecord(piece) || !isRecord(piece['SpecialToken'])) return null;
  const id = piece['SpecialToken']['id'];
  return typeof id === 'string' && id !== '' ? id : null;
}

export function isChatTemplate(v: unknown): v is ChatTemplate {
  if (typeof v === 'string') return true;
  return Array.isArray(v) && v.every((c) => isRecord(c) && typeof c['name'] === 'string' && typeof c['template'] === 'string');
}
