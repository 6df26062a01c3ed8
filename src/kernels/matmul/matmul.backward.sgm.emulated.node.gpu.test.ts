// The tensor-core input gradient's staging, per-row dy scaling, offsets, bounds, epilogue and split-K on
// lavapipe, which has no subgroup matrices: the builder's `emulate` mode does each matrix operation with
// per-lane loops (everything else is the same text), checked row by row against float64 of the operands the
// kernel multiplies (dy scaled by its row's power of two and rounded to f16, W f16).
import { describe, expect, it } from 'vitest';
import { createStorage, readF32, uploadStorage } from '../../gpu/buffers';
import { requestGpu, type GpuContext } from '../../gpu/device';
import { submitDispatches } from '../../gpu/pipelines';
import { roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { f32Buffer, randomHalf } from '../common/testing';
import { matmulBackwardSgm } from './matmul.backward.sgm';
import { splitKPartialsBytes } from './matmul.splitk';

// f32 sums of exact f16 x f16 products, unscaled exactly: only the accumulation order differs from float64.
const TOL = 2e-5;

/** Largest power of two s with max |row| · s < 2^14 (1 for a zero row): the kernel's scale, found differently. */
function rowScale(row: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < row.length; i++) m = Math.max(m, Math.abs(row[i]));
  if (m === 0) return 1;
  let e = Math.ceil(Math.log2(m));
  if (2 ** e <= m) e++;
  return 2 ** (14 - e);
}

/** max over columns of |got - want| / max |want| for each row: small rows are held to the same relative bound. */
function rowErrors(got: ArrayLike<number>, want: ArrayLike<number>, n: number, cols: number): number[] {
  return Array.from({ length: n }, (_, r) => {
    let d = 0;
    let m = Number.MIN_VALUE;
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      d = Math.max(d, Number.isFinite(got[i]) ? Math.abs(got[i] - want[i]) : Infinity);
      m = Math.max(m, Math.abs(want[i]));
    }
    return d / m;
  });
}

describe('matmul backward on subgroup matrices, emulated matrix operations (lavapipe)', async () => {
  const gpu = await requestGpu();
  // One kernel (lavapipe compiles an emulated one in tens of seconds), run plain and split: partial row, column
  // and K blocks (70 = 64 + 6 rows, 72 = 64 + 8 columns, 80 = 32 + 32 + 16 outputs), a dy window, rowOffset.
  const shape = { M: 16, N: 8, K: 16, subgroupSize: 32 };
  const [n, inDim, outDim, rowOffset, dyOffset, dyStride] = [70, 72, 80, 3, 5, 90];
  // Rows whose gradients are tiny, small, unit, large and past f16's range, and a zero row; the rest unit.
  const magnitudes = [1e-7, 1e-3, 1, 300, 1e5, 0];
  it.skipIf(!gpu.caps.f16)(`n=${n} in=${inDim} out=${outDim} rowOffset=${rowOffset} dy window ${dyOffset}+${outDim} of ${dyStride}, 64x64 blocks of 16x8x16, accumulate, plain and split-K`, async () => {
    const ctx: GpuContext = { ...gpu, caps: { ...gpu.caps, subgroupMatrix: shape } };
    const rng = new Rng(n + inDim + outDim);
    const W = randomHalf(rng, (rowOffset + outDim + 2) * inDim);
    const dl = rng.fill(n * dyStride);
    const dx0 = rng.fill(n * inDim);
    for (let r = 0; r < n; r++) {
      const mag = magnitudes[r] ?? 1;
      for (let k = 0; k < dyStride; k++) dl[r * dyStride + k] *= mag;
      for (let c = 0; c < inDim; c++) dx0[r * inDim + c] *= mag || 1;
    }
    // float64 of what the kernel multiplies: each dy row scaled, rounded to f16 and unscaled (exact).
    const want = Float64Array.from(dx0);
    for (let r = 0; r < n; r++) {
      const row = dl.subarray(r * dyStride + dyOffset, r * dyStride + dyOffset + outDim);
      const s = rowScale(row);
      const q = roundToF16(Array.from(row, (v) => v * s));
      for (let k = 0; k < outDim; k++) {
        const g = q[k] / s;
        for (let c = 0; c < inDim; c++) want[r * inDim + c] += g * W.values[(rowOffset + k) * inDim + c];
      }
    }
    const Wb = uploadStorage(ctx, 'W', W.bits);
    const dyb = f32Buffer(ctx, 'dy', dl);
    const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
    const base = { W: Wb, dy: dyb, n, inDim, outDim, rowOffset, dyOffset, dyStride, accumulate: true, block: 64 as const };
    for (const splits of [1, 2]) {
      const dxb = f32Buffer(ctx, 'dx', dx0);
      const ds = await matmulBackwardSgm(ctx, { ...base, dx: dxb, ...(splits > 1 ? { partials, splits } : {}) }, { emulate: true });
      expect(ds.map((d) => d.label)).toEqual(splits > 1 ? ['matmul_backward_mma_splitk_16x8x16_w32_b64', 'matmul_splitk_reduce'] : ['matmul_backward_mma_16x8x16_w32_b64']);
      expect(ds[0].workgroups).toEqual([2, 2, splits]);
      submitDispatches(ctx, ds);
      const errs = rowErrors(await readF32(ctx, dxb, n * inDim), want, n, inDim);
      // Every row over the bound, as [row, error] (an empty list passes).
      expect(errs.flatMap((e, r) => (e < TOL ? [] : [[r, e]])), `splits=${splits}`).toEqual([]);
      dxb.destroy();
    }
    for (const b of [Wb, dyb, partials]) b.destroy();
  });
});
