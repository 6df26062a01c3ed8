// The f16-weight tensor-core matmul where no GPU here has subgroup matrices: every variant compiles on Dawn's
// null backend, and ops.linear's choice (f16 matrices and 4-bit ones' f16 copies on tensor cores from 64 rows;
// the tiled and rows kernels otherwise) is checked through a context that claims the feature. Results: the
// emulated test on lavapipe, and the kit's f16-check on a GPU.
import { describe, expect, it, vi } from 'vitest';
import type { GpuContext, SubgroupMatrixShape } from '../../gpu/device';
import { linear, linearBackward } from '../../model/ops';
import { sgmNullContext } from '../common/sgm-null-context';
import { SGM_BLOCK_ROWS, sgmGeometry } from '../common/sgm-tile.wgsl';
import { matmulSgm } from './matmul.sgm';
import { matmulSgmWgsl } from './matmul.sgm.wgsl';

// The null backend grants 16 KiB of workgroup memory: mma pipelines are compiled (and must have no message)
// but not made.
vi.mock('../../gpu/pipelines', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../gpu/pipelines')>();
  return {
    ...actual,
    getPipeline: async (ctx: GpuContext, kernel: string, code: string, entryPoint?: string) => {
      if (!kernel.includes('_mma')) return actual.getPipeline(ctx, kernel, code, entryPoint);
      const messages = (await ctx.device.createShaderModule({ code }).getCompilationInfo()).messages;
      if (messages.length) throw new Error(`${kernel}: ${messages.map((m) => m.message).join('; ')}`);
      return { label: kernel } as GPUComputePipeline;
    },
  };
});

const shapes: SubgroupMatrixShape[] = [
  { M: 16, N: 16, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 16, subgroupSize: 32 },
  { M: 16, N: 8, K: 8, subgroupSize: 32 },
  { M: 16, N: 16, K: 16, subgroupSize: 64 },
];

describe('f16-weight subgroup-matrix matmul on Dawn (null backend)', () => {
  it('every shape, block height and store variant compiles without a message', async () => {
    const ctx = await sgmNullContext(shapes[0]);
    const messages: string[] = [];
    for (const s of shapes) {
      for (const rows of [128, 64] as const) {
        for (const [bias, accumulate] of [[false, false], [true, false], [false, true], [true, true]]) {
          const module = ctx.device.createShaderModule({ code: matmulSgmWgsl({ bias, accumulate }, s, { rows }) });
          for (const m of (await module.getCompilationInfo()).messages) messages.push(`${JSON.stringify(s)} rows=${rows} bias=${bias} acc=${accumulate}: ${m.lineNum}:${m.linePos} ${m.message}`);
        }
      }
    }
    expect(messages).toEqual([]);
    ctx.device.destroy();
  });

  it('ops.linear and linearBackward put f16 matrices and 4-bit copies on tensor cores from 64 rows, at the copy row of a window', async () => {
    const nullCtx = await sgmNullContext(shapes[0]);
    const ctx = { ...nullCtx, caps: { ...nullCtx.caps, limits: { ...nullCtx.caps.limits, maxComputeWorkgroupStorageSize: 49152 } } };
    const buf = (bytes: number, label: string) => ctx.device.createBuffer({ label, size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const [inDim, outDim, n] = [64, 4096, 512];
    const W16 = buf(3 * outDim * inDim * 2, 'W.f16');
    const q = { qWeight: buf((3 * outDim * inDim) / 2, 'W.q_weight'), qScale: buf((3 * outDim * inDim) / 16, 'W.q_scale'), scale: 'f16' as const };
    const [x, y] = [buf(n * inDim * 4, 'x'), buf(n * outDim * 4, 'y')];
    const base = { x, y, n, inDim, outDim };
    // A 4-bit window (rowBase) with its copy: the copy, from the window's row.
    const d = await linear(ctx, { ...base, W: { ...q, rowBase: outDim, f16: W16 } });
    expect(SGM_BLOCK_ROWS).toBe(64);
    expect(d.label).toBe('matmul_mma64_16x16x16');
    expect(d.buffers[0]).toBe(W16);
    const g = sgmGeometry(shapes[0], 64);
    if (typeof g === 'string') throw new Error(g);
    expect(d.workgroups).toEqual([outDim / g.blockCols, n / g.blockRows]);
    // The window's first row is in the uniform, which the null backend cannot read back: matmulSgm's bounds
    // check shows the row is counted.
    await expect(matmulSgm(ctx, { ...base, W: W16, wRow: 2 * outDim + 1 })).rejects.toThrow(/matmulSgm: W \('W.f16', .* B\) is smaller than rows \[0, 12289\) x 64 halves/);
    // No copy: the 4-bit tensor-core kernel; an f16 matrix: the f16 one; bias and accumulate keep their names.
    expect((await linear(ctx, { ...base, W: q })).label).toBe('q4_matmul_mma64_16x16x16_f16_sf16');
    expect((await linear(ctx, { ...base, W: W16, bias: buf(outDim * 4, 'b'), accumulate: true })).label).toBe('matmul_mma64_16x16x16_bias_acc');
    // 128-row blocks on request (benchmarks).
    expect((await matmulSgm(ctx, { ...base, W: W16, blockRows: 128 })).label).toBe('matmul_mma_16x16x16');
    // Below 64 rows, a forced kernel or tile, or inDim not a multiple of 32: the tiled and rows kernels.
    expect((await linear(ctx, { ...base, n: 63, W: { ...q, f16: W16 } })).label).toMatch(/^q4_matmul_tiled/);
    expect((await linear(ctx, { ...base, n: 4, W: W16 })).label).toMatch(/^matmul_rows/);
    expect((await linear(ctx, { ...base, W: W16, kernel: 'tiled' })).label).toMatch(/^matmul_tiled/);
    expect((await linear(ctx, { ...base, W: W16, tileRows: 64 })).label).toMatch(/^matmul_tiled/);
    expect((await linear(ctx, { ...base, inDim: 48, W: W16 })).label).toMatch(/^matmul_tiled/);
    // Input gradients likewise: dx [n, inDim] from dy [n, outDim] through the copy, at the window's rows.
    const dx = buf(n * inDim * 4, 'dx');
    const back = await linearBackward(ctx, { ...q, rowBase: outDim, f16: W16 }, { dy: y, dx, n, inDim, outDim, rowOffset: 0 });
    expect(back.map((b) => b.label)).toEqual([expect.stringMatching(/^matmul_backward_mma/)]);
    expect(back[0].buffers[0]).toBe(W16);
    expect((await linearBackward(ctx, { ...q, f16: W16 }, { dy: y, dx, n: 63, inDim, outDim }))[0].label).toMatch(/^q4_matmul_backward/);
    expect((await linearBackward(ctx, q, { dy: y, dx, n, inDim, outDim }))[0].label).toMatch(/^q4_matmul_backward/);
    // A device without subgroup matrices: never.
    const plain = { ...nullCtx, caps: { ...nullCtx.caps, subgroupMatrix: null } };
    expect((await linear(plain, { ...base, W: { ...q, f16: W16 } })).label).toMatch(/^q4_matmul_tiled/);
    expect((await linearBackward(plain, { ...q, f16: W16 }, { dy: y, dx, n, inDim, outDim }))[0].label).toMatch(/^q4_matmul_backward/);
    await expect(matmulSgm(plain, { ...base, W: W16 })).rejects.toThrow(/matmulSgm: the device was not made with subgroup matrices/);
    ctx.device.destroy();
  });
});
