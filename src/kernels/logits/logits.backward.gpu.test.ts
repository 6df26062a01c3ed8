import { describe, expect, it } from 'vitest';
import { createStorage, readF32, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, randomHalf, relMaxErr, u32Buffer } from '../common/testing';
import { centralDiff, dot } from '../finite-diff.ref';
import { matmulBackwardRef } from '../matmul/matmul.backward.ref';
import { dlogits, lmHeadBackward } from './logits.backward';
import { dlogitsRef, logitsRef, lseRef, targetLogpRef } from './logits.backward.ref';

// layout 'chunk': one [rows, vc] buffer per chunk; 'full': chunks written into a [rows, V] buffer at
// column v0 (the forward lmHead's default layout).
const cases = [
  [1, 4, 5, 5, 'chunk', 1],
  [6, 24, 50, 16, 'full', 1],
  [20, 40, 300, 128, 'chunk', 1 / 0.7],
  [3, 16, 70, 32, 'full', 1 / 0.7],
] as const;

describe('LM-head backward in vocab chunks (dlogits in place, then dx += dlogits E_chunk)', async () => {
  for (const path of await weightPaths()) {
    for (const [rows, H, V, chunk, layout, scale] of cases) {
      it(`${path}: rows=${rows} H=${H} V=${V} chunk=${chunk} ${layout} scale=${scale.toFixed(3)}`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(rows * 13 + V);
        const E = randomHalf(rng, V * H, 0.5);
        const x = rng.fill(rows * H);
        const targets = Array.from({ length: rows }, () => rng.int(V));
        const dlogp = rng.fill(rows);
        const z = logitsRef(x, E.values, rows, H, V);
        const lse = lseRef(z, rows, V, scale);
        const wantD = dlogitsRef(z, dlogp, targets, rows, V, scale);
        const wantDx = matmulBackwardRef(wantD, E.values, rows, H, V);
        if (rows * H <= 200) {
          const fd = centralDiff((xx) => dot(targetLogpRef(xx, E.values, targets, rows, H, V, scale), dlogp), x);
          expect(relMaxErr(wantDx, fd)).toBeLessThan(1e-7);
        }
        const Eb = uploadStorage(ctx, 'E', E.bits);
        const b = { dlogp: f32Buffer(ctx, 'dlogp', dlogp), lse: f32Buffer(ctx, 'lse', lse), targets: u32Buffer(ctx, 'targets', targets) };
        const dx = createStorage(ctx, 'dx', rows * H * 4);
        const gotD = new Float32Array(rows * V);
        const full = layout === 'full' ? f32Buffer(ctx, 'logits', z) : undefined;
        for (let v0 = 0; v0 < V; v0 += chunk) {
          const vc = Math.min(chunk, V - v0);
          let logits: GPUBuffer;
          if (full) {
            logits = full;
          } else {
            const zc = new Float32Array(rows * vc);
            for (let r = 0; r < rows; r++) for (let j = 0; j < vc; j++) zc[r * vc + j] = z[r * V + v0 + j];
            logits = f32Buffer(ctx, 'logits', zc);
          }
          const ld = full ? V : vc;
          const colOffset = full ? v0 : 0;
          submitDispatches(ctx, [
            await dlogits(ctx, { logits, ...b, rows, vc, v0, ld, colOffset, scale }),
            await lmHeadBackward(ctx, { E: Eb, dlogits: logits, dx, rows, vc, hidden: H, eRowOffset: v0, accumulate: v0 > 0, ld, colOffset }),
          ]);
          if (!full) {
            const dc = await readF32(ctx, logits, rows * vc);
            for (let r = 0; r < rows; r++) for (let j = 0; j < vc; j++) gotD[r * V + v0 + j] = dc[r * vc + j];
            logits.destroy();
          }
        }
        if (full) gotD.set(await readF32(ctx, full, rows * V));
        expect(relMaxErr(gotD, wantD)).toBeLessThan(1e-5);
        expect(relMaxErr(await readF32(ctx, dx, rows * H), wantDx)).toBeLessThan(1e-5);
        for (const buf of [Eb, dx, ...Object.values(b), ...(full ? [full] : [])]) buf.destroy();
      });
    }
  }
});
