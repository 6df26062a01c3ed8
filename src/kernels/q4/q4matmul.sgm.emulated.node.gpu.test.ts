// The subgroup-matrix kernel's staging, offsets, bounds and epilogue on lavapipe, which has no subgroup
// matrices: q4SgmWgsl's `emulate` mode does each matrix operation with per-lane loops (everything else is the
// same text), checked against float64 of the f16-rounded operands. Dawn's builtins themselves were checked
// on an H200 by the subgroup-matrix probe; the kit's f16-check runs the real kernel there.
import { describe, expect, it } from 'vitest';
import { requestGpu } from '../../gpu/device';
import { readF32 } from '../../gpu/buffers';
import { getPipeline, submitDispatches } from '../../gpu/pipelines';
import { roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { paramsUniform } from '../common/params';
import { f32Buffer, matmulInputs, relMaxErr } from '../common/testing';
import { matmulRef } from '../matmul/matmul.ref';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4SgmWgsl, sgmGeometry } from './q4matmul.sgm.wgsl';
import { destroyQ4, uploadQ4 } from './q4weight';

// f32 sums of exact f16 x f16 products: only the accumulation order differs from float64.
const TOL = 2e-5;

describe('q4 subgroup-matrix kernel, emulated matrix operations (lavapipe)', async () => {
  const ctx = await requestGpu();
  // One case: lavapipe takes about half a minute to compile the emulated kernel (a 16x16x16 one over a minute).
  // n, in, out, bias, accumulate, scale, matrix N, subgroup size: partial row and column blocks, 2 groups.
  const cases: Array<[number, number, number, boolean, boolean, Q4ScaleDtype, number, number]> = [[70, 64, 136, true, true, 'f16', 8, 32]];
  for (const [n, inDim, outDim, bias, accumulate, scale, N, sgSize] of cases) {
    it.skipIf(!ctx.caps.f16)(`n=${n} in=${inDim} out=${outDim} bias=${bias} accumulate=${accumulate} scale=${scale} 16x${N}x16, subgroups of ${sgSize}`, async () => {
      const shape = { M: 16, N, K: 16, subgroupSize: sgSize };
      const g = sgmGeometry(shape);
      if (typeof g === 'string') throw new Error(g);
      const rng = new Rng(n + inDim + outDim);
      const q = quantizeQ4(rng.fill(outDim * inDim, 0.5), outDim, inDim, scale);
      const { x, b, y0, xb, bb } = matmulInputs(ctx, rng, n, inDim, outDim);
      const W = uploadQ4(ctx, 'W', q);
      const y = f32Buffer(ctx, 'y', y0);
      const dims = paramsUniform(ctx, 'dims', [['u32', n], ['u32', inDim], ['u32', outDim], ['u32', outDim], ['u32', 0], ['u32', 0]]);
      const code = q4SgmWgsl({ f16: true, scale }, { bias, accumulate }, shape, { emulate: true });
      const pipeline = await getPipeline(ctx, `q4_sgm_emulated_${N}_${sgSize}`, code);
      const buffers = [W.qWeight, W.qScale, xb, y, dims, ...(bias ? [bb] : [])];
      submitDispatches(ctx, [{ pipeline, buffers, workgroups: [Math.ceil(outDim / g.blockCols), Math.ceil(n / g.blockRows)] }]);
      const got = await readF32(ctx, y, n * outDim);
      const want = matmulRef(roundToF16(x), roundToF16(dequantizeQ4(q)), n, inDim, outDim, bias ? b : undefined, accumulate ? y0 : undefined);
      expect(relMaxErr(got, want)).toBeLessThan(TOL);
      destroyQ4(W);
      for (const buf of [xb, bb, y, dims]) buf.destroy();
    });
  }
});
