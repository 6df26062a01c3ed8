import { describe, expect, it } from 'vitest';
import { readF32, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, f32Buffer, randomHalf, relMaxErr, u32Buffer } from '../common/testing';
import { matmulRef } from '../matmul/matmul.ref';
import { lmHead, lseChunk, lseFinalize } from './logits';
import { logprobRef } from './logits.ref';

describe('logits kernels (chunked LM head + log-softmax stats)', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [rows, H, V, chunk] of [
      [1, 8, 5, 5],
      [3, 33, 1000, 300],
      [6, 20, 777, 256],
      // Rows >= 64 over a small vocabulary take the one-thread-per-row kernel; a chunk over 1024 the wide one.
      [70, 8, 320, 320],
      [2, 8, 1500, 1500],
    ] as const) {
      it(`${path}: rows=${rows} H=${H} V=${V} in chunks of ${chunk}: logits, lse and target logprobs`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(rows * 7 + V);
        const E = randomHalf(rng, V * H);
        const x = rng.fill(rows * H, 2);
        const targets = Array.from({ length: rows }, () => rng.int(V));
        targets[0] = V - 1; // last column of the last chunk
        const xb = f32Buffer(ctx, 'x', x);
        const tb = u32Buffer(ctx, 'targets', targets);
        const logits = emptyF32(ctx, 'logits', rows * V);
        const stats = emptyF32(ctx, 'stats', rows * 3);
        const lse = emptyF32(ctx, 'lse', rows);
        const logprob = emptyF32(ctx, 'logprob', rows);
        const bufs = [xb, tb, logits, stats, lse, logprob];
        const ds = [];
        for (let off = 0; off < V; off += chunk) {
          const cnt = Math.min(chunk, V - off);
          const Eb = uploadStorage(ctx, 'Echunk', E.bits.subarray(off * H, (off + cnt) * H));
          bufs.push(Eb);
          ds.push(await lmHead(ctx, { x: xb, E: Eb, logits, rows, hidden: H, rowOffset: off, rowCount: cnt, ld: V }));
          ds.push(await lseChunk(ctx, { logits, stats, targets: tb, rows, cols: cnt, ld: V, colOffset: off, vocabOffset: off, first: off === 0 }));
        }
        ds.push(await lseFinalize(ctx, { stats, lse, logprob, rows }));
        submitDispatches(ctx, ds);
        const gotLogits = await readF32(ctx, logits, rows * V);
        const wantLogits = matmulRef(x, E.values, rows, H, V);
        // f32 dots over H <= 33 terms: 1e-5 relative to the largest logit.
        expect(relMaxErr(gotLogits, wantLogits)).toBeLessThan(1e-5);
        // The stats are checked against float64 over the GPU's own logits, isolating the reduction:
        // lse and logprob carry a few ulp of |lse| (~10 here) from exp/log and the merges.
        const want = logprobRef(gotLogits, targets, rows, V);
        expect(relMaxErr(await readF32(ctx, lse, rows), want.lse)).toBeLessThan(2e-6);
        expect(relMaxErr(await readF32(ctx, logprob, rows), want.logprob)).toBeLessThan(2e-6);
        for (const b of bufs) b.destroy();
      });
    }
    it(`${path}: temperature scale and a chunk-only logits buffer`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(5);
      const [rows, V, chunk] = [2, 600, 256];
      const all = rng.fill(rows * V, 3);
      const targets = [17, 599];
      const stats = emptyF32(ctx, 'stats', rows * 3);
      const lse = emptyF32(ctx, 'lse', rows);
      const logprob = emptyF32(ctx, 'logprob', rows);
      const tb = u32Buffer(ctx, 'targets', targets);
      const bufs = [stats, lse, logprob, tb];
      const ds = [];
      for (let off = 0; off < V; off += chunk) {
        const cnt = Math.min(chunk, V - off);
        const part = new Float32Array(rows * chunk);
        for (let r = 0; r < rows; r++) part.set(all.subarray(r * V + off, r * V + off + cnt), r * chunk);
        const pb = f32Buffer(ctx, 'chunk', part);
        bufs.push(pb);
        ds.push(await lseChunk(ctx, { logits: pb, stats, targets: tb, rows, cols: cnt, ld: chunk, vocabOffset: off, first: off === 0, scale: 1 / 0.7 }));
      }
      ds.push(await lseFinalize(ctx, { stats, lse, logprob, rows }));
      submitDispatches(ctx, ds);
      const want = logprobRef(all, targets, rows, V, 1 / 0.7);
      expect(relMaxErr(await readF32(ctx, lse, rows), want.lse)).toBeLessThan(2e-6);
      expect(relMaxErr(await readF32(ctx, logprob, rows), want.logprob)).toBeLessThan(2e-6);
      for (const b of bufs) b.destroy();
    });
  }
});
