// The exact-replay cache: for each assistant turn kiln generated with tool calls, the sampled token
// ids and what they mean (calls, content, reasoning), keyed by scope (model and template) and by
// every tool-call id kiln minted for the turn. A bounded LRU, optionally persisted as JSON lines
// (appended per turn, compacted when it grows to twice the live size). The file is untrusted on
// load: malformed lines are skipped, and a record is used only after its tokens are checked
// against its text (see buildPrompt).
import { appendFileSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { InvalidArgumentError } from '../errors.js';

export interface ReplayCall {
  id: string;
  name: string;
  /** The arguments object as the model wrote it (JSON text). */
  arguments: string;
}

export interface ReplayRecord {
  /** Model and template the turn was generated with. */
  scope: string;
  calls: ReplayCall[];
  content: string;
  reasoning: string;
  /** The turn's sampled tokens, without the end-of-generation token. */
  tokens: number[];
  /** What `tokens` spell, control tokens by their text. */
  text: string;
  /** Length (UTF-16 units) and sha256 of the rendered prompt the turn was generated after. */
  promptChars: number;
  promptHash: string;
}

export interface ReplayCacheOptions {
  /** Tool-call ids remembered (a turn with n calls takes n). Default 4096. */
  maxEntries?: number;
  /** Memory the remembered turns may take (eight bytes a token, two a character). Default 64 MiB. */
  maxBytes?: number;
  /** A JSON-lines file to load the cache from and append new turns to. */
  file?: string;
  /** Where write failures are reported; persistence stops after one. */
  onError?: (err: Error) => void;
}

export const DEFAULT_REPLAY_ENTRIES = 4096;
export const DEFAULT_REPLAY_BYTES = 64 << 20;
/** Largest persisted file read at start-up; past it the file is ignored (and later rewritten). */
export const MAX_REPLAY_FILE_BYTES = 256 * 1024 * 1024;

export class ReplayCache {
  readonly maxEntries: number;
  readonly maxBytes: number;
  private readonly entries = new Map<string, ReplayRecord>();
  /** Each live record's keys still in `entries`; a record's bytes count while it has one. */
  private readonly keysLeft = new Map<ReplayRecord, number>();
  private used = 0;
  private file: string | null;
  private linesInFile = 0;

  constructor(private readonly options: ReplayCacheOptions = {}) {
    const max = options.maxEntries ?? DEFAULT_REPLAY_ENTRIES;
    if (!Number.isInteger(max) || max < 1) throw new InvalidArgumentError(`replay.maxEntries must be a positive integer, got ${max}`, 'replay.maxEntries');
    this.maxEntries = max;
    this.maxBytes = options.maxBytes ?? DEFAULT_REPLAY_BYTES;
    this.file = options.file ?? null;
    if (this.file !== null) this.load(this.file);
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the remembered turns take, by the cache's accounting. */
  get bytes(): number {
    return this.used;
  }

  /** The record holding tool-call `id` in `scope`; marks it recently used. */
  get(scope: string, id: string): ReplayRecord | undefined {
    const key = keyOf(scope, id);
    const rec = this.entries.get(key);
    if (rec === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, rec);
    return rec;
  }

  add(record: ReplayRecord): void {
    this.insert(record);
    if (this.file === null) return;
    try {
      appendFileSync(this.file, JSON.stringify(record) + '\n');
      this.linesInFile++;
      if (this.linesInFile > 2 * Math.max(1, this.liveRecords().length)) this.compact(this.file);
    } catch (e) {
      this.file = null;
      this.options.onError?.(e as Error);
    }
  }

  clear(): void {
    this.entries.clear();
    this.keysLeft.clear();
    this.used = 0;
  }

  private insert(record: ReplayRecord): void {
    if (sizeOf(record) > this.maxBytes) return;
    for (const c of record.calls) {
      const key = keyOf(record.scope, c.id);
      this.remove(key);
      this.entries.set(key, record);
      const left = this.keysLeft.get(record) ?? 0;
      if (left === 0) this.used += sizeOf(record);
      this.keysLeft.set(record, left + 1);
    }
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries && this.used <= this.maxBytes) break;
      this.remove(oldest);
    }
  }

  private remove(key: string): void {
    const record = this.entries.get(key);
    if (record === undefined) return;
    this.entries.delete(key);
    const left = this.keysLeft.get(record)! - 1;
    if (left > 0) {
      this.keysLeft.set(record, left);
      return;
    }
    this.keysLeft.delete(record);
    this.used -= sizeOf(record);
  }

  private liveRecords(): ReplayRecord[] {
    return [...new Set(this.entries.values())];
  }

  private load(file: string): void {
    if (!existsSync(file)) return;
    try {
      if (statSync(file).size > MAX_REPLAY_FILE_BYTES) {
        this.options.onError?.(new Error(`replay cache file ${JSON.stringify(file)} is over ${MAX_REPLAY_FILE_BYTES} bytes; starting empty`));
        this.linesInFile = Number.MAX_SAFE_INTEGER; // rewritten on the next add
        return;
      }
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.length === 0) continue;
        this.linesInFile++;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          continue;
        }
        if (isReplayRecord(value)) this.insert(value);
      }
    } catch (e) {
      this.options.onError?.(e as Error);
    }
  }

  private compact(file: string): void {
    const live = this.liveRecords();
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, live.map((r) => JSON.stringify(r) + '\n').join(''));
    renameSync(tmp, file);
    this.linesInFile = live.length;
  }
}

function sizeOf(r: ReplayRecord): number {
  let chars = r.scope.length + r.content.length + r.reasoning.length + r.text.length + r.promptHash.length;
  for (const c of r.calls) chars += c.id.length + c.name.length + c.arguments.length;
  return 8 * r.tokens.length + 2 * chars + 256;
}

function keyOf(scope: string, id: string): string {
  return `${scope}\n${id}`;
}

function isReplayRecord(v: unknown): v is ReplayRecord {
  if (v === null || typeof v !== 'object') return false;
  const r = v as Record<string, unknown>;
  return typeof r['scope'] === 'string'
    && Array.isArray(r['calls']) && r['calls'].length > 0
    && r['calls'].every((c: unknown) => {
      const x = c as Record<string, unknown> | null;
      return x !== null && typeof x === 'object' && typeof x['id'] === 'string' && typeof x['name'] === 'string' && typeof x['arguments'] === 'string';
    })
    && typeof r['content'] === 'string' && typeof r['reasoning'] === 'string'
    && Array.isArray(r['tokens']) && r['tokens'].every((t: unknown) => Number.isInteger(t) && (t as number) >= 0)
    && typeof r['text'] === 'string'
    && Number.isInteger(r['promptChars']) && (r['promptChars'] as number) >= 0
    && typeof r['promptHash'] === 'string';
}
