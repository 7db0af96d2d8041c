// The replay cache: LRU by tool-call id within a scope, and the JSON-lines file (reloaded,
// malformed lines skipped, compacted, write failures contained).
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReplayCache, type ReplayRecord } from '../../../src/chat/replay-cache.js';
import { InvalidArgumentError } from '../../../src/errors.js';

const record = (ids: string[], scope = 's'): ReplayRecord => ({
  scope,
  calls: ids.map((id) => ({ id, name: 'f', arguments: '{}' })),
  content: '',
  reasoning: '',
  tokens: [1, 2, 3],
  text: 'abc',
  promptChars: 10,
  promptHash: 'h',
});

const tempFile = () => join(mkdtempSync(join(tmpdir(), 'kiln-replay-')), 'replay.jsonl');

describe('ReplayCache', () => {
  it('finds a turn by any of its call ids, within its scope only', () => {
    const c = new ReplayCache();
    const r = record(['a', 'b']);
    c.add(r);
    expect(c.get('s', 'a')).toBe(r);
    expect(c.get('s', 'b')).toBe(r);
    expect(c.get('other', 'a')).toBeUndefined();
  });

  it('evicts the least recently used ids past maxEntries', () => {
    const c = new ReplayCache({ maxEntries: 3 });
    c.add(record(['a']));
    c.add(record(['b']));
    c.add(record(['c']));
    c.get('s', 'a'); // a is now the most recent
    c.add(record(['d']));
    expect(c.get('s', 'b')).toBeUndefined();
    expect(c.get('s', 'a')).toBeDefined();
    expect(c.size).toBe(3);
    expect(() => new ReplayCache({ maxEntries: 0 })).toThrow(InvalidArgumentError);
  });

  it('stays within its byte bound, evicting the least recently used turns', () => {
    const c = new ReplayCache({ maxBytes: 1 << 20 });
    const big = (id: string) => ({ ...record([id]), tokens: Array.from({ length: 20_000 }, (_, i) => i), text: 'x'.repeat(100_000) });
    // 160 KB + 200 KB per turn: 2 fit in 1 MiB.
    for (const id of ['a', 'b', 'c', 'd']) c.add(big(id));
    expect(c.bytes).toBeLessThanOrEqual(1 << 20);
    expect(c.bytes).toBeGreaterThan(600_000);
    expect([c.get('s', 'a'), c.get('s', 'b')]).toEqual([undefined, undefined]);
    expect(c.get('s', 'd')).toBeDefined();
    // A turn larger than the whole cache is not kept.
    c.add({ ...big('e'), text: 'y'.repeat(1 << 20) });
    expect(c.get('s', 'e')).toBeUndefined();
    c.clear();
    expect(c.bytes).toBe(0);
  });

  it('persists turns to a file and loads them again, skipping malformed lines', () => {
    const file = tempFile();
    const c = new ReplayCache({ file });
    c.add(record(['a']));
    c.add(record(['b', 'c']));
    appendFileSync(file, 'not json\n{"scope": "s", "calls": []}\n{"scope":"s","calls":[{"id":"x","name":"f","arguments":"{}"}],"content":"","reasoning":"","tokens":[-1],"text":"","promptChars":0,"promptHash":""}\n');
    const again = new ReplayCache({ file });
    expect(again.get('s', 'a')?.tokens).toEqual([1, 2, 3]);
    expect(again.get('s', 'c')?.calls.map((x) => x.id)).toEqual(['b', 'c']);
    expect(again.get('s', 'x')).toBeUndefined();
  });

  it('compacts the file to the live turns', () => {
    const file = tempFile();
    const c = new ReplayCache({ file, maxEntries: 2 });
    for (let i = 0; i < 20; i++) c.add(record([`id${i}`]));
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(4);
    const again = new ReplayCache({ file, maxEntries: 2 });
    expect(again.get('s', 'id19')).toBeDefined();
    expect(again.get('s', 'id0')).toBeUndefined();
  });

  it('reports a file it cannot write and keeps working in memory', () => {
    const errors: Error[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'kiln-replay-'));
    const c = new ReplayCache({ file: dir, onError: (e) => errors.push(e) }); // a folder is not writable as a file
    c.add(record(['a']));
    c.add(record(['b']));
    expect(errors).toHaveLength(2); // the load and the first append; then persistence is off
    expect(c.get('s', 'b')).toBeDefined();
  });
});
