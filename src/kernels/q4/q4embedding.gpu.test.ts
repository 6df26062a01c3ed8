import { describe, expect, it } from 'vitest';
import { readF32, writeBuffer } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { embeddingRef } from '../embedding/embedding.ref';
import { matmulRef } from '../matmul/matmul.ref';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4Embedding } from './q4embedding';
import { q4LmHead } from './q4logits';
import { destroyQ4, uploadQ4, type Q4Weight } from './q4weight';

describe('q4 embedding gather and tied q4 LM head', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [V, H, N, chunks, scale] of [[5, 32, 4, 1, 'f16'], [37, 64, 9, 3, 'f32'], [101, 96, 33, 4, 'f16']] as const) {
      it(`${path}: V=${V} H=${H} N=${N} in ${chunks} window(s) of one table, scale ${scale}: rows of deq(E), bad ids give zeros`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(V * 7 + H);
        const q = quantizeQ4(rng.fill(V * H), V, H, scale as Q4ScaleDtype);
        const ids = Array.from({ length: N }, () => rng.int(V));
        ids[N - 1] = V + 5; // out of range: zeros, never an out-of-bounds read
        const idsBuf = u32Buffer(ctx, 'ids', ids);
        const x = emptyF32(ctx, 'x', N * H);
        writeBuffer(ctx, x, new Float32Array(N * H).fill(12345)); // rows nobody wrote would show
        const E = uploadQ4(ctx, 'E', q);
        const per = Math.ceil(V / chunks);
        const ds = [];
        for (let off = 0; off < V; off += per) {
          const rows = Math.min(per, V - off);
          ds.push(await q4Embedding(ctx, { E: { ...E, rowBase: off }, ids: idsBuf, x, n: N, hidden: H, vocab: V, rowOffset: off, rowCount: rows }));
        }
        submitDispatches(ctx, ds);
        const got = await readF32(ctx, x, N * H);
        const want = embeddingRef(dequantizeQ4(q), ids, H, V);
        // (q - 7) * an f16 scale is exact in f32; an f32 scale rounds once.
        if (scale === 'f16') expect(Array.from(got)).toEqual(Array.from(want));
        else expect(relMaxErr(got, want)).toBeLessThan(1e-7);
        expect(got.some((v) => v !== 0)).toBe(true);
        destroyQ4(E);
        idsBuf.destroy();
        x.destroy();
      });
    }

    for (const rows of [1, 6]) {
      it(`${path}: LM head rows=${rows} over vocabulary windows (one shared table and a separate chunk buffer)`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(11 + rows);
        const [H, V] = [64, 300];
        const q = quantizeQ4(rng.fill(V * H), V, H);
        const Ed = dequantizeQ4(q);
        const x = rng.fill(rows * H, 2);
        const xb = f32Buffer(ctx, 'x', x);
        const logits = emptyF32(ctx, 'logits', rows * V);
        const E = uploadQ4(ctx, 'E', q);
        // The last window comes from its own buffers, as an engine that splits the table would hold it.
        const tail = 200;
        const tailQ = { ...q, qWeight: q.qWeight.slice((tail * H) / 8), qScale: q.qScale.slice((tail * H) / 32), out: V - tail };
        const Etail: Q4Weight = uploadQ4(ctx, 'Etail', tailQ);
        const ds = [];
        for (const [off, cnt] of [[0, 128], [128, 72]]) {
          ds.push(await q4LmHead(ctx, { x: xb, E: { ...E, rowBase: off }, logits, rows, hidden: H, rowOffset: off, rowCount: cnt, ld: V }));
        }
        ds.push(await q4LmHead(ctx, { x: xb, E: Etail, logits, rows, hidden: H, rowOffset: tail, rowCount: V - tail, ld: V }));
        submitDispatches(ctx, ds);
        const got = await readF32(ctx, logits, rows * V);
        expect(relMaxErr(got, matmulRef(x, Ed, rows, H, V))).toBeLessThan(1e-5);
        destroyQ4(E);
        destroyQ4(Etail);
        xb.destroy();
        logits.destroy();
      });
    }
  }
});
