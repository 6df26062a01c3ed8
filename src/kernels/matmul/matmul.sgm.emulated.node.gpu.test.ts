// The f16-weight subgroup-matrix kernel's staging, offsets (wRow, yStride, yOffset), bounds, both epilogues
// (straight into y for blocks wholly inside it, the scratch one for the rest) and both block heights on
// lavapipe, which has no subgroup matrices: `emulate` does each matrix operation with per-lane loops
// (common/sgm-tile.wgsl.ts), checked against float64 of the f16-rounded operands. Dawn's builtins themselves
// run on a GPU in the kit's f16-check.
import { describe, expect, it } from 'vitest';
import { requestGpu } from '../../gpu/device';
import { readF32 } from '../../gpu/buffers';
import { getPipeline, submitDispatches } from '../../gpu/pipelines';
import { roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { paramsUniform } from '../common/params';
import { f32Buffer, randomHalf, relMaxErr } from '../common/testing';
import { uploadStorage } from '../../gpu/buffers';
import { sgmGeometry, type SgmBlockRows } from '../common/sgm-tile.wgsl';
import { matmulRef } from './matmul.ref';
import { matmulSgmWgsl } from './matmul.sgm.wgsl';

// f32 sums of exact f16 x f16 products: only the accumulation order differs from float64.
const TOL = 2e-5;

describe('f16-weight subgroup-matrix kernel, emulated matrix operations (lavapipe)', async () => {
  const ctx = await requestGpu();
  // n, in, out, wRow, yOffset, bias, accumulate, block rows: [0] has a full block (direct stores) and partial
  // ones in both directions; [1] goes through the scratch epilogue with bias and accumulate.
  const cases: Array<[number, number, number, number, number, boolean, boolean, SgmBlockRows]> = [
    [100, 64, 136, 3, 0, false, false, 64],
    [70, 32, 40, 0, 5, true, true, 128],
  ];
  for (const [n, inDim, outDim, wRow, yOffset, bias, accumulate, rows] of cases) {
    it.skipIf(!ctx.caps.f16)(`n=${n} in=${inDim} out=${outDim} wRow=${wRow} yOffset=${yOffset} bias=${bias} accumulate=${accumulate}, ${rows}-row blocks`, async () => {
      const shape = { M: 16, N: 8, K: 16, subgroupSize: 32 };
      const g = sgmGeometry(shape, rows);
      if (typeof g === 'string') throw new Error(g);
      const rng = new Rng(n + inDim + outDim);
      const W = randomHalf(rng, (wRow + outDim + 2) * inDim, 0.5);
      const x = rng.fill(n * inDim);
      const b = rng.fill(outDim);
      const yStride = yOffset + outDim + 3;
      const y0 = rng.fill(n * yStride);
      const [Wb, xb, bb, y] = [uploadStorage(ctx, 'W', W.bits), f32Buffer(ctx, 'x', x), f32Buffer(ctx, 'b', b), f32Buffer(ctx, 'y', y0)];
      const dims = paramsUniform(ctx, 'dims', [['u32', n], ['u32', inDim], ['u32', outDim], ['u32', yStride], ['u32', yOffset], ['u32', wRow]]);
      const code = matmulSgmWgsl({ bias, accumulate }, shape, { emulate: true, rows });
      const pipeline = await getPipeline(ctx, `matmul_sgm_emulated_${rows}_${bias}_${accumulate}`, code);
      submitDispatches(ctx, [{ pipeline, buffers: [Wb, xb, y, dims, ...(bias ? [bb] : [])], workgroups: [Math.ceil(outDim / g.blockCols), Math.ceil(n / g.blockRows)] }]);
      const got = await readF32(ctx, y, n * yStride);
      const Wrows = W.values.subarray(wRow * inDim, (wRow + outDim) * inDim);
      const prod = matmulRef(roundToF16(x), Wrows, n, inDim, outDim, bias ? b : undefined);
      const want = Float64Array.from(y0);
      for (let r = 0; r < n; r++) for (let c = 0; c < outDim; c++) want[r * yStride + yOffset + c] = prod[r * outDim + c] + (accumulate ? y0[r * yStride + yOffset + c] : 0);
      expect(relMaxErr(got, want)).toBeLessThan(TOL);
      for (const buf of [Wb, xb, bb, y, dims]) buf.destroy();
    });
  }
});
