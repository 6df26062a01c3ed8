import { describe, expect, it } from 'vitest';
import { batchLayout, commonPrefix, MIN_SHARED_PREFIX } from './batch-layout';

const req = (prompt: number[], maxNew: number, reusePrefix?: boolean) => ({ prompt, rows: prompt.length + maxNew, reusePrefix });
const seq = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

describe('batchLayout', () => {
  it('commonPrefix stops at the first difference and short of every last token', () => {
    expect(commonPrefix([seq(10), seq(10)])).toBe(9);
    expect(commonPrefix([seq(10), [...seq(6), 99, 100], seq(12)])).toBe(6);
    expect(commonPrefix([seq(3), seq(10)])).toBe(2);
    expect(commonPrefix([[5], [5]])).toBe(0);
  });

  it('a group sharing a long prompt stores it once: sequence 0 whole, the others from the prefix on, then the staging rows', () => {
    // 8 rollouts: a 700-token shared head, own tails of 100..170 tokens, 200 new tokens each.
    const head = seq(700);
    const reqs = Array.from({ length: 8 }, (_, b) => req([...head, ...seq(100 + 10 * b, 1000 * (b + 1))], 200));
    const L = batchLayout(reqs, true);
    expect(L.shared).toBe(700);
    expect(L.offsets).toEqual([0, 700, 700, 700, 700, 700, 700, 700]);
    // Region 0: 800 + 200 rows; region b: its tail + 200.
    const sizes = reqs.map((r, b) => (b === 0 ? r.rows : r.rows - 700));
    expect(L.bases).toEqual(sizes.map((_, b) => sizes.slice(0, b).reduce((a, x) => a + x, 0)));
    expect(L.staging).toBe(sizes.reduce((a, x) => a + x, 0));
    expect(L.rows).toBe(L.staging + 870);
    // 4,250 rows instead of 8,280: the group fits an 8k-row cache as one batch.
    expect(L.rows).toBe(4250);
    expect(batchLayout(reqs, false).rows).toBe(8280);
  });

  it('keeps whole regions when sharing cannot be read, is too short, saves nothing, or a request reuses nothing', () => {
    const head = seq(MIN_SHARED_PREFIX);
    const group = (h: number[], n = 4) => Array.from({ length: n }, (_, b) => req([...h, ...seq(5, 100 * (b + 1))], 8));
    const plain = (reqs: ReturnType<typeof group>) => ({
      shared: 0,
      bases: reqs.map((_, b) => reqs.slice(0, b).reduce((a, r) => a + r.rows, 0)),
      offsets: reqs.map(() => 0),
      staging: -1,
      rows: reqs.reduce((a, r) => a + r.rows, 0),
    });
    // The general decode reads one range per row.
    expect(batchLayout(group(seq(300)), false)).toEqual(plain(group(seq(300))));
    // One token short of the minimum.
    expect(batchLayout(group(head.slice(1)), true)).toEqual(plain(group(head.slice(1))));
    expect(batchLayout(group(head), true).shared).toBe(MIN_SHARED_PREFIX);
    // Two sequences: the staging rows (a whole prompt) cost more than the one prefix saved.
    expect(batchLayout(group(seq(40), 2), true)).toEqual(plain(group(seq(40), 2)));
    // reusePrefix: false anywhere.
    const noReuse = group(seq(300)).map((r, b) => (b === 2 ? { ...r, reusePrefix: false } : r));
    expect(batchLayout(noReuse, true)).toEqual(plain(noReuse));
    // A lone request.
    expect(batchLayout(group(seq(300), 1), true)).toEqual(plain(group(seq(300), 1)));
  });
});
