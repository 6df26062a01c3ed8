// The tensor-core input gradient where no GPU here has the feature: every matrix shape and block compiles on
// Dawn's null backend (which offers `chromium-experimental-subgroup-matrix` with allow_unsafe_apis but computes
// nothing), and matmulBackwardSgm's block, grid, split and refusals are checked through a context that claims
// the feature. The arithmetic is checked on lavapipe by the emulated test beside this one.
import { describe, expect, it, vi } from 'vitest';
import type { GpuCapabilities, GpuContext, SubgroupMatrixShape } from '../../gpu/device';
import { sgmNullContext as nullContext } from '../common/sgm-null-context';
import { matmulBackwardSgm, sgmBackwardBlock, sgmBackwardProblem } from './matmul.backward.sgm';
import { matmulBackwardSgmWgsl, SGM_BWD_BLOCKS, sgmBackwardGeometry } from './matmul.backward.sgm.wgsl';
import { splitKPartialsBytes } from './matmul.splitk';

// The null backend grants 16 KiB of workgroup memory (an H200 49152 B), less than either block needs: these
// pipelines are compiled (and must have no message) but not made.
vi.mock('../../gpu/pipelines', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../gpu/pipelines')>();
  return {
    ...actual,
    getPipeline: async (ctx: GpuContext, kernel: string, code: string, entryPoint?: string) => {
      if (!kernel.startsWith('matmul_backward_mma')) return actual.getPipeline(ctx, kernel, code, entryPoint);
      const messages = (await ctx.device.createShaderModule({ code }).getCompilationInfo()).messages;
      if (messages.length) throw new Error(`${kernel}: ${messages.map((m) => m.message).join('; ')}`);
      return { label: kernel } as GPUComputePipeline;
    },
  };
});

/** The context with an H200's workgroup memory, or other limits. */
function withLimits(ctx: GpuContext, limits: Partial<GpuCapabilities['limits']>, shape = ctx.caps.subgroupMatrix): GpuContext {
  return { ...ctx, caps: { ...ctx.caps, subgroupMatrix: shape, limits: { ...ctx.caps.limits, maxComputeWorkgroupStorageSize: 49152, ...limits } } };
}

// The H200's f16 -> f32 configs with 32-wide subgroups, and 16x16x16 with 64-wide ones (the 4-subgroup layout).
const shapes: SubgroupMatrixShape[] = [
  { M: 16, N: 16, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 8, subgroupSize: 32 },
  { M: 16, N: 16, K: 16, subgroupSize: 64 },
];

describe('matmul backward on subgroup matrices, Dawn (null backend)', () => {
  it('every shape and block compiles without a message (and its emulated text, where it has one)', async () => {
    const ctx = await nullContext(shapes[0]);
    for (const s of shapes) {
      for (const block of SGM_BWD_BLOCKS) {
        const g = sgmBackwardGeometry(s, block);
        if (typeof g === 'string') throw new Error(g);
        // Every block fits an H200's 49152 B of workgroup memory.
        expect(g.workgroupBytes).toBeLessThanOrEqual(49152);
        const emulable = (s.M * s.N) % (4 * s.subgroupSize) === 0;
        for (const emulate of emulable ? [false, true] : [false]) {
          const code = matmulBackwardSgmWgsl(s, block, { emulate });
          const messages = (await ctx.device.createShaderModule({ code }).getCompilationInfo()).messages;
          expect(messages.map((m) => `${JSON.stringify(s)} ${block} emulate=${emulate}: ${m.lineNum}:${m.linePos} ${m.message}`)).toEqual([]);
        }
      }
    }
    ctx.device.destroy();
  });

  it('takes 64 x 64 blocks, splits long reductions into partials, and refuses what it cannot run', async () => {
    const nullCtx = await nullContext(shapes[0]);
    const ctx = withLimits(nullCtx, {});
    const [inDim, outDim] = [896, 4864];
    const buf = (label: string, bytes: number) => ctx.device.createBuffer({ label, size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const maxN = 4096;
    const W = buf('W', outDim * inDim * 2);
    const [dy, dx] = [buf('dy', maxN * outDim * 4), buf('dx', maxN * inDim * 4)];
    const base = { W, dy, dx, inDim, outDim };
    // 64 x 64 blocks whatever the grid (faster than 128 x 128 on the H200 even with 152 of them); 128 on request.
    expect(sgmBackwardBlock(ctx)).toBe(64);
    for (const [n, block, grid] of [[512, 64, [14, 8, 1]], [2048, 64, [14, 32, 1]], [4096, 64, [14, 64, 1]]] as const) {
      const ds = await matmulBackwardSgm(ctx, { ...base, n, accumulate: true });
      expect(ds.map((d) => d.label)).toEqual([`matmul_backward_mma_16x16x16_w32_b${block}`]);
      expect(ds[0].workgroups).toEqual(grid);
      expect(ds[0].buffers.slice(0, 3)).toEqual([W, dy, dx]);
    }
    expect((await matmulBackwardSgm(ctx, { ...base, n: 512, block: 128 }))[0].workgroups).toEqual([7, 4, 1]);
    // 32 rows over 4864 outputs: 14 blocks of 64, split in 9 slices of 544 (17 K steps) into partials.
    const partials = buf('partials', splitKPartialsBytes(32, inDim));
    const split = await matmulBackwardSgm(ctx, { ...base, n: 32, partials });
    expect(split.map((d) => d.label)).toEqual(['matmul_backward_mma_splitk_16x16x16_w32_b64', 'matmul_splitk_reduce']);
    expect(split[0].workgroups).toEqual([14, 1, 9]);
    expect(split[0].buffers.slice(0, 3)).toEqual([W, dy, partials]);
    expect(split[1].buffers.slice(0, 2)).toEqual([partials, dx]);
    expect((await matmulBackwardSgm(ctx, { ...base, n: 32 })).map((d) => d.label)).toEqual(['matmul_backward_mma_16x16x16_w32_b64']);
    // Label prefixes the profiles group by, and 64-wide subgroups' layout.
    const wide = withLimits(nullCtx, {}, shapes[3]);
    expect((await matmulBackwardSgm(wide, { ...base, n: 4096 }))[0].label).toBe('matmul_backward_mma_16x16x16_w64_b64');
    for (const d of split) expect(d.label).not.toContain('_sg');

    // Refusals, each naming its reason: callers keep the f32 kernel.
    expect(sgmBackwardProblem(ctx, { inDim, outDim: 64 })).toBeNull();
    expect(sgmBackwardProblem(withLimits(ctx, {}, null), { inDim, outDim: 64 })).toMatch(/no f16 subgroup matrices/);
    expect(sgmBackwardProblem(ctx, { inDim: 90, outDim: 64 })).toMatch(/inDim 90 is not a multiple of 4/);
    expect(sgmBackwardProblem(ctx, { inDim, outDim: 66 })).toMatch(/outDim 66 is not a multiple of 4 \(dy is read as vec4<f32>\)/);
    expect(sgmBackwardProblem(ctx, { inDim, outDim: 64, dyStride: 70 })).toMatch(/dyStride 70 is not a multiple of 4/);
    expect(sgmBackwardProblem(ctx, { inDim, outDim: 64, dyStride: 72, dyOffset: 5 })).toMatch(/dyOffset 5 is not a multiple of 4/);
    expect(sgmBackwardProblem(withLimits(ctx, { maxComputeWorkgroupStorageSize: 16384 }), { inDim, outDim: 64 })).toMatch(/workgroup memory/);
    expect(sgmBackwardProblem(withLimits(ctx, {}, { ...shapes[0], subgroupSize: 16 }), { inDim, outDim: 64 })).toMatch(/subgroup size 16/);
    // 128 x 128 needs more than 20 KiB, 64 x 64 less: only the smaller block is offered, and always taken.
    const mid = withLimits(ctx, { maxComputeWorkgroupStorageSize: 20480 });
    expect(sgmBackwardProblem(mid, { inDim, outDim: 64, block: 128 })).toMatch(/block 128 is not available/);
    expect(sgmBackwardBlock(mid)).toBe(64);
    await expect(matmulBackwardSgm(withLimits(ctx, {}, null), { ...base, n: 32 })).rejects.toThrow(/matmulBackwardSgm: the device has no f16 subgroup matrices/);
    await expect(matmulBackwardSgm(ctx, { ...base, n: 32, W: buf('Wsmall', 64) })).rejects.toThrow(/Wsmall/);
    await expect(matmulBackwardSgm(ctx, { ...base, n: 32, dyOffset: 4 })).rejects.toThrow(/dyOffset 4 \+ outDim 4864 exceeds dyStride 4864/);
    await expect(matmulBackwardSgm(ctx, { ...base, n: 32, splits: 3 })).rejects.toThrow(/needs a 'partials' scratch buffer/);
    for (const b of [W, dy, dx, partials]) b.destroy();
    nullCtx.device.destroy();
  });
});
