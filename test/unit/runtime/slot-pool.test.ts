import { describe, expect, it } from 'vitest';
import { commonPrefixLength, SlotPool } from '../../../src/runtime/slot-pool.js';

describe('SlotPool', () => {
  it('gives a request the free slot with the longest common prefix', async () => {
    const pool = new SlotPool(3);
    const a = await pool.acquire([]);
    const b = await pool.acquire([]);
    const c = await pool.acquire([]);
    a.tokens = [1, 2, 3];
    b.tokens = [1, 2, 3, 4, 5];
    c.tokens = [9];
    pool.release(a);
    pool.release(b);
    pool.release(c);
    expect((await pool.acquire([1, 2, 3, 4, 7])).index).toBe(b.index);
    expect((await pool.acquire([9, 9])).index).toBe(c.index);
    expect((await pool.acquire([5])).index).toBe(a.index);
  });

  it('serves waiters in arrival order and never lets a newcomer jump the queue', async () => {
    const pool = new SlotPool(1);
    const held = await pool.acquire([]);
    const order: string[] = [];
    const first = pool.acquire([]).then((s) => { order.push('first'); return s; });
    const second = pool.acquire([]).then((s) => { order.push('second'); return s; });
    expect(pool.queueDepth).toBe(2);
    pool.release(held);
    const late = pool.acquire([]).then((s) => { order.push('late'); return s; });
    pool.release(await first);
    pool.release(await second);
    pool.release(await late);
    expect(order).toEqual(['first', 'second', 'late']);
  });

  it('drops a waiter whose signal aborts, without losing the slot', async () => {
    const pool = new SlotPool(1);
    const held = await pool.acquire([]);
    const ctrl = new AbortController();
    const waiting = pool.acquire([], ctrl.signal);
    ctrl.abort(new Error('client went away'));
    await expect(waiting).rejects.toThrow('client went away');
    expect(pool.queueDepth).toBe(0);
    pool.release(held);
    expect((await pool.acquire([])).index).toBe(held.index);
  });

  it('measures common prefixes', () => {
    expect(commonPrefixLength([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(commonPrefixLength([], [1])).toBe(0);
    expect(commonPrefixLength([1, 2], [1, 2])).toBe(2);
  });
});
