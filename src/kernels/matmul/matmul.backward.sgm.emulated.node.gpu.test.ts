// The tensor-core input gradient's staging, per-row dy scaling, offsets, bounds, epilogue and split-K on
// lavapipe, which has no subgroup matrices: the builder's `emulate` mode does each matrix operation with
// per-lane loops (everything else is the same text), checked row by row against float64 of the operands the
// kernel multiplies (dy scaled by its row's power of two and rounded to f16, W f16). On a GPU with the
// feature the same cases also run the real kernel.
import { describe, expect, it } from 'vitest';
import { createStorage, readF32, uploadStorage } from '../../gpu/buffers';
import { requestGpu, type GpuContext, type SubgroupMatrixShape } from '../../gpu/device';
import { submitDispatches } from '../../gpu/pipelines';
import { roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { f32Buffer, randomHalf } from '../common/testing';
import { matmulBackwardSgm } from './matmul.backward.sgm';
import type { SgmBackwardBlock } from './matmul.backward.sgm.wgsl';
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

interface Case {
  n: number;
  inDim: number;
  outDim: number;
  rowOffset: number;
  dyOffset: number;
  dyStride: number;
  accumulate: boolean;
  block: SgmBackwardBlock;
  /** Slice counts to run (1: the plain kernel; more: split-K into partials, then the reduce). */
  splits: number[];
}

// Rows whose gradients are tiny, small, unit, large and past f16's range, and a zero row; the rest unit.
const MAGNITUDES = [1e-7, 1e-3, 1, 300, 1e5, 0];

/** Runs case `c` through matmulBackwardSgm on `ctx` and checks every row of dx against float64. */
async function checkCase(ctx: GpuContext, c: Case, emulate: boolean): Promise<void> {
  const { n, inDim, outDim, rowOffset, dyOffset, dyStride, block } = c;
  const rng = new Rng(n + inDim + outDim);
  const W = randomHalf(rng, (rowOffset + outDim + 2) * inDim);
  const dl = rng.fill(n * dyStride);
  const dx0 = rng.fill(n * inDim);
  for (let r = 0; r < n; r++) {
    const mag = MAGNITUDES[r] ?? 1;
    for (let k = 0; k < dyStride; k++) dl[r * dyStride + k] *= mag;
    for (let i = 0; i < inDim; i++) dx0[r * inDim + i] *= mag || 1;
  }
  // float64 of what the kernel multiplies: each dy row scaled, rounded to f16 and unscaled (exact).
  const want = c.accumulate ? Float64Array.from(dx0) : new Float64Array(n * inDim);
  for (let r = 0; r < n; r++) {
    const row = dl.subarray(r * dyStride + dyOffset, r * dyStride + dyOffset + outDim);
    const s = rowScale(row);
    const q = roundToF16(Array.from(row, (v) => v * s));
    for (let k = 0; k < outDim; k++) {
      const g = q[k] / s;
      for (let i = 0; i < inDim; i++) want[r * inDim + i] += g * W.values[(rowOffset + k) * inDim + i];
    }
  }
  const Wb = uploadStorage(ctx, 'W', W.bits);
  const dyb = f32Buffer(ctx, 'dy', dl);
  const partials = createStorage(ctx, 'partials', splitKPartialsBytes(n, inDim));
  const base = { W: Wb, dy: dyb, n, inDim, outDim, rowOffset, dyOffset, dyStride, accumulate: c.accumulate, block };
  const s = ctx.caps.subgroupMatrix!;
  const shape = `${s.M}x${s.N}x${s.K}_w${s.subgroupSize}_b${block}`;
  for (const splits of c.splits) {
    const dxb = f32Buffer(ctx, 'dx', dx0);
    const ds = await matmulBackwardSgm(ctx, { ...base, dx: dxb, ...(splits > 1 ? { partials, splits } : {}) }, { emulate });
    expect(ds.map((d) => d.label)).toEqual(splits > 1 ? [`matmul_backward_mma_splitk_${shape}`, 'matmul_splitk_reduce'] : [`matmul_backward_mma_${shape}`]);
    expect(ds[0].workgroups).toEqual([Math.ceil(inDim / block), Math.ceil(n / block), splits]);
    submitDispatches(ctx, ds);
    const errs = rowErrors(await readF32(ctx, dxb, n * inDim), want, n, inDim);
    // Every row over the bound, as [row, error] (an empty list passes).
    expect(errs.flatMap((e, r) => (e < TOL ? [] : [[r, e]])), `${shape} splits=${splits}`).toEqual([]);
    dxb.destroy();
  }
  for (const b of [Wb, dyb, partials]) b.destroy();
}

// Partial row, column and K blocks of the 64 block (70 = 64 + 6 rows, 72 = 64 + 8 columns, 80 = 32 + 32 + 16
// outputs), a dy window, rowOffset, accumulate, plain and split in 2; the 128 block (130 = 128 + 2 rows,
// 132 = 128 + 4 columns, overwriting).
const CASES: Case[] = [
  { n: 70, inDim: 72, outDim: 80, rowOffset: 3, dyOffset: 8, dyStride: 92, accumulate: true, block: 64, splits: [1, 2] },
  { n: 130, inDim: 132, outDim: 40, rowOffset: 0, dyOffset: 0, dyStride: 40, accumulate: false, block: 128, splits: [1] },
];
const title = (c: Case): string =>
  `n=${c.n} in=${c.inDim} out=${c.outDim} rowOffset=${c.rowOffset} dy ${c.dyOffset}+${c.outDim} of ${c.dyStride}, ${c.block}x${c.block} blocks, accumulate=${c.accumulate}, splits ${c.splits.join('/')}`;

describe('matmul backward on subgroup matrices', async () => {
  // With allow_unsafe_apis (the first request makes the instance): a GPU with the feature also runs the real kernel.
  const gpu = await requestGpu({ subgroupMatrix: true });
  // Lavapipe compiles an emulated kernel in seconds to tens of seconds: one matrix shape per case.
  const emulated: Array<[Case, SubgroupMatrixShape]> = [
    [CASES[0], { M: 16, N: 8, K: 16, subgroupSize: 32 }],
    [CASES[1], { M: 16, N: 16, K: 16, subgroupSize: 32 }],
  ];
  for (const [c, shape] of emulated) {
    it.skipIf(!gpu.caps.f16)(`emulated matrix operations, ${shape.M}x${shape.N}x${shape.K} in subgroups of ${shape.subgroupSize}: ${title(c)}`, async () => {
      await checkCase({ ...gpu, caps: { ...gpu.caps, subgroupMatrix: shape } }, c, true);
    });
  }
  // Dawn's builtins themselves: only where the device has subgroup matrices (an NVIDIA GPU), not on lavapipe.
  for (const c of CASES) {
    it.skipIf(!gpu.caps.subgroupMatrix)(`the device's subgroup matrices: ${title(c)}`, async () => {
      await checkCase(gpu, c, false);
    });
  }
});
