import { describe, expect, it } from 'vitest';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, emptyF32, f32Buffer, relMaxErr } from '../common/testing';
import { lora, loraDown } from './lora';
import { loraRef } from './lora.ref';
import { LORA_DOWN_FEW } from './lora.wgsl';

describe('lora kernels', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    const ctx0 = await gpuFor(path);
    for (const subgroups of ctx0.caps.subgroups ? [true, false] : [false]) {
      const tag = `${path}${subgroups ? ' subgroups' : ''}`;
      // Decode's row counts (1, 3, 8: one block of LORA_DOWN_FEW) and a prefill's (70: 4x4 tiles, the last
      // block short); widths below, across and far above one slice per subgroup (256 and 1000); ranks that
      // do not fill a 4-rank tile; outputs across two up blocks and ranks across two t chunks (300, 70).
      const cases = [[1, 1, 1, 1], [3, 17, 9, 2], [8, 300, 67, 16], [70, 1000, 33, 6], [70, 130, 20, 16], [2, 64, 33, 64], [3, 40, 300, 70]] as const;
      for (const [N, IN, OUT, R] of cases) {
        it(`${tag}: N=${N} in=${IN} out=${OUT} r=${R} matches float64 (t and y)`, async () => {
          const ctx = await gpuFor(path);
          const rng = new Rng(N + IN * 3 + OUT * 5 + R * 7);
          const x = rng.fill(N * IN);
          const A = rng.fill(R * IN);
          const B = rng.fill(OUT * R);
          const y0 = rng.fill(N * OUT);
          const scale = 16 / R;
          const bufs = [f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'A', A), f32Buffer(ctx, 'B', B), f32Buffer(ctx, 'y', y0), emptyF32(ctx, 't', N * R)];
          const [xb, Ab, Bb, y, t] = bufs;
          submitDispatches(ctx, await lora(ctx, { x: xb, A: Ab, B: Bb, t, y, n: N, inDim: IN, outDim: OUT, rank: R, scale, subgroups }));
          const want = loraRef(x, A, B, y0, N, IN, OUT, R, scale);
          // f32 sums over <= 1000 (then <= 64) O(1) products: relative error well under 1e-5.
          expect(relMaxErr(await readF32(ctx, t, N * R), want.t)).toBeLessThan(1e-5);
          expect(relMaxErr(await readF32(ctx, y, N * OUT), want.y)).toBeLessThan(1e-5);
          for (const b of bufs) b.destroy();
        });
      }

      // Decode (a block of <= 8 rows, a rank per workgroup) and prefill (4x4 tiles) must give a row the same
      // t bits, so a sequence's decode agrees with its scoring.
      it(`${tag}: a row's t has the same bits in a 1-, 8- and 70-row call`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(99);
        const IN = 700;
        const R = 16;
        const x = rng.fill(70 * IN);
        const A = rng.fill(R * IN);
        const xb = f32Buffer(ctx, 'x', x);
        const Ab = f32Buffer(ctx, 'A', A);
        const ts = [1, LORA_DOWN_FEW.rows, 70].map((n) => ({ n, t: emptyF32(ctx, `t${n}`, n * R) }));
        submitDispatches(ctx, await Promise.all(ts.map(({ n, t }) => loraDown(ctx, { x: xb, A: Ab, t, n, inDim: IN, rank: R, subgroups }))));
        const all = await readF32(ctx, ts[2].t, 70 * R);
        for (const { n, t } of ts.slice(0, 2)) expect(bitDiffCount(await readF32(ctx, t, n * R), all.subarray(0, n * R)), `${n} rows`).toBe(0);
        for (const b of [xb, Ab, ...ts.map((s) => s.t)]) b.destroy();
      });
    }
  }
});
