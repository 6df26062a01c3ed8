// The subgroup-matrix 4-bit matmul where no GPU here has the feature: every variant is compiled (and made a
// pipeline) by Dawn's null backend, which offers `chromium-experimental-subgroup-matrix` with allow_unsafe_apis
// but computes nothing, and q4Matmul's choice of it is checked through a context that claims the feature. Its
// results are compared with the f32 path on a real GPU by the kit's f16-check (bench/f16-agreement.ts).
import { describe, expect, it, vi } from 'vitest';
import type { GpuContext, SubgroupMatrixShape } from '../../gpu/device';
import { sgmNullContext } from '../common/sgm-null-context';
import { SGM_BLOCK_ROWS, sgmGeometry as blockGeometry } from '../common/sgm-tile.wgsl';
import { Rng } from '../../util/rng';
import { quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { q4Matmul } from './q4matmul';
import { q4SgmWgsl, SGM_MIN_ROWS, sgmGeometry } from './q4matmul.sgm.wgsl';
import { destroyQ4, uploadQ4 } from './q4weight';

// The null backend grants 16 KiB of workgroup memory (an H200 49152 B), so it cannot make this kernel's
// 28 KiB pipeline: for q4Matmul's choice, sgm pipelines are compiled (and must have no message) but not made.
vi.mock('../../gpu/pipelines', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../gpu/pipelines')>();
  return {
    ...actual,
    getPipeline: async (ctx: GpuContext, kernel: string, code: string, entryPoint?: string) => {
      if (!kernel.startsWith('q4_matmul_mma')) return actual.getPipeline(ctx, kernel, code, entryPoint);
      const messages = (await ctx.device.createShaderModule({ code }).getCompilationInfo()).messages;
      if (messages.length) throw new Error(`${kernel}: ${messages.map((m) => m.message).join('; ')}`);
      return { label: kernel } as GPUComputePipeline;
    },
  };
});

const nullContext = (shape: SubgroupMatrixShape): Promise<GpuContext> => sgmNullContext(shape);

// The H200's f16 -> f32 configs with 32-wide subgroups, and 16x16x16 with 64-wide ones (the 4-subgroup layout).
const shapes: SubgroupMatrixShape[] = [
  { M: 16, N: 16, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 8, subgroupSize: 32 },
  { M: 16, N: 16, K: 16, subgroupSize: 64 },
];

describe('q4 subgroup-matrix matmul on Dawn (null backend)', () => {
  it('every shape, scale dtype and store variant compiles without a message', async () => {
    const ctx = await nullContext(shapes[0]);
    for (const s of shapes) {
      for (const scale of ['f16', 'f32'] as const) {
        for (const bias of [false, true]) {
          for (const accumulate of [false, true]) {
            for (const rows of [128, 64] as const) {
            const code = q4SgmWgsl({ f16: true, scale }, { bias, accumulate }, s, { rows });
            const module = ctx.device.createShaderModule({ code });
            const messages = (await module.getCompilationInfo()).messages.map((m) => `${JSON.stringify(s)} ${scale} bias=${bias} acc=${accumulate} rows=${rows}: ${m.lineNum}:${m.linePos} ${m.message}`);
            expect(messages).toEqual([]);
            }
          }
        }
      }
    }
    ctx.device.destroy();
  });

  it('q4Matmul takes it from SGM_MIN_ROWS rows unless a kernel, a tile or no subgroup matrix is asked for', async () => {
    const nullCtx = await nullContext(shapes[0]);
    const ctx = { ...nullCtx, caps: { ...nullCtx.caps, limits: { ...nullCtx.caps.limits, maxComputeWorkgroupStorageSize: 49152 } } };
    const rng = new Rng(7);
    const [inDim, outDim] = [64, 200];
    const scale: Q4ScaleDtype = 'f16';
    const W = uploadQ4(ctx, 'W', quantizeQ4(rng.fill(outDim * inDim, 0.5), outDim, inDim, scale));
    const n = 130;
    const buf = (floats: number) => ctx.device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const [x, y, b] = [buf(n * inDim), buf(n * outDim), buf(outDim)];
    const base = { W, x, y, inDim, outDim };
    expect(SGM_BLOCK_ROWS).toBe(64);
    const g = blockGeometry(shapes[0], 64);
    if (typeof g === 'string') throw new Error(g);
    const d = await q4Matmul(ctx, { ...base, n, bias: b, accumulate: true });
    expect(d.label).toBe('q4_matmul_mma64_16x16x16_f16_sf16_bias_acc');
    expect(d.workgroups).toEqual([Math.ceil(outDim / g.blockCols), Math.ceil(n / g.blockRows)]);
    expect(d.buffers).toEqual([W.qWeight, W.qScale, x, y, expect.anything(), b]);
    expect((await q4Matmul(ctx, { ...base, n: SGM_MIN_ROWS })).label).toMatch(/^q4_matmul_mma/);
    expect((await q4Matmul(ctx, { ...base, n: SGM_MIN_ROWS - 1 })).label).toMatch(/^q4_matmul_tiled/);
    expect((await q4Matmul(ctx, { ...base, n, subgroupMatrix: false })).label).toMatch(/^q4_matmul_tiled/);
    expect((await q4Matmul(ctx, { ...base, n, kernel: 'tiled' })).label).toMatch(/^q4_matmul_tiled/);
    expect((await q4Matmul(ctx, { ...base, n, tileRows: 64 })).label).toMatch(/^q4_matmul_tiled/);
    // A device that cannot hold its workgroup memory keeps the tiled kernel.
    const small = { ...ctx, caps: { ...ctx.caps, limits: { ...ctx.caps.limits, maxComputeWorkgroupStorageSize: 16384 } } };
    expect((await q4Matmul(small, { ...base, n })).label).toMatch(/^q4_matmul_tiled/);
    destroyQ4(W);
    ctx.device.destroy();
  });
});
