// The 4-bit forward matmul's two kernels for prefill / training row counts side by side on ONE device: the
// register-tiled one (q4Matmul with subgroupMatrix: false) and, where the device was made with subgroup
// matrices, the tensor-core one (q4Matmul's default there, src/kernels/q4/q4matmul.sgm.wgsl.ts). Each is checked
// against float64 on sampled entries (x times the dequantised weights) and timed over `reps` dispatches in one
// pass (timestamps when the device has them, else wall time). With subgroup matrices it also times the f16-copy
// kernel (the matrix dequantised once to f16 by q4DequantF16, then matmulSgm: what ops.linear runs for a model
// uploaded with f16 copies) at both block heights. Run by the f16-check part on its subgroup-matrix device
// (bench/f16-agreement.ts), so one kit call gives the speed-ups on the training shapes.
import type { GpuContext } from '../src/gpu/device';
import { readF32 } from '../src/gpu/buffers';
import type { Dispatch } from '../src/gpu/pipelines';
import { Rng } from '../src/util/rng';
import { f32Buffer } from '../src/kernels/common/testing';
import { dequantizeQ4, quantizeQ4 } from '../src/kernels/q4/q4.ref';
import { q4Matmul } from '../src/kernels/q4/q4matmul';
import { q4DequantF16 } from '../src/kernels/q4/q4dequant';
import { matmulSgm } from '../src/kernels/matmul/matmul.sgm';
import { destroyQ4, uploadQ4, type Q4Weight } from '../src/kernels/q4/q4weight';
import { checkEntries, sampleEntries, tflops, type CheckResult, type Shape } from './subgroup-matrix-check';
import { timeDispatchList, timeDispatches } from './timed-dispatch';
import { q4MatmulBackwardSplitK } from '../src/kernels/q4/q4matmul.backward';
import { matmulBackwardSgm } from '../src/kernels/matmul/matmul.backward.sgm';
import { splitKPartialsBytes } from '../src/kernels/matmul/matmul.splitk';
import { getPipeline, submitDispatches } from '../src/gpu/pipelines';
import { createStorage } from '../src/gpu/buffers';
import { paramsUniform } from '../src/kernels/common/params';
import { VARIANTS, shapeProblem, subgroupMatrixWgsl } from './subgroup-matrix-wgsl';

/** The training shapes (768 rows; q/k/v, gate/up and down of the 0.5B model), as the subgroup-matrix probe's. */
export const TRAINING_SHAPES: Shape[] = [
  { name: 'qkv', m: 768, k: 896, n: 1152 },
  { name: 'gateup', m: 768, k: 896, n: 9728 },
  { name: 'down', m: 768, k: 4864, n: 896 },
];

/** The training forward's own products (512 rows a micro-batch, q and gate alone), where block height matters. */
export const FORWARD_SHAPES: Shape[] = [
  { name: 'q', m: 512, k: 896, n: 896 },
  { name: 'gate', m: 512, k: 896, n: 4864 },
  { name: 'down', m: 512, k: 4864, n: 896 },
];

export interface KernelRun {
  label: string;
  check: CheckResult;
  ms: number;
  tflops: number;
  method: 'timestamp' | 'wall';
}

export interface ShapeRow {
  shape: string;
  tiled: KernelRun;
  /** null where the device has no subgroup matrices (or q4Matmul did not choose them for this shape). */
  mma: KernelRun | null;
  speedup: number | null;
  /** The f16 copy on tensor cores, 128- and 64-row blocks (empty without subgroup matrices). */
  f16mma: Array<KernelRun & { speedup: number }>;
}

async function timeDispatch(ctx: GpuContext, d: Dispatch, reps: number): Promise<{ ms: number; method: 'timestamp' | 'wall' }> {
  const bind = ctx.device.createBindGroup({ layout: d.pipeline.getBindGroupLayout(0), entries: d.buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
  const [x, y = 1] = d.workgroups;
  return timeDispatches(ctx.device, d.pipeline, bind, [x, y], reps);
}

const round = (x: number): number => Number(x.toPrecision(4));

/** A new f16 copy of W's `rows` x `inDim` values, as model/weights.ts makes them. */
async function f16Copy(ctx: GpuContext, label: string, W: Q4Weight, rows: number, inDim: number): Promise<GPUBuffer> {
  const out = createStorage(ctx, label, rows * inDim * 2);
  submitDispatches(ctx, [await q4DequantF16(ctx, W, rows, inDim, out)]);
  return out;
}

/** The probe's staged-8sg-4x2-bk32-f32a kernel (bench/subgroup-matrix-wgsl.ts) on x, the f16 copy and y. */
async function probeDispatch(ctx: GpuContext, s: Shape, x: GPUBuffer, W16: GPUBuffer, y: GPUBuffer): Promise<Dispatch> {
  const sm = ctx.caps.subgroupMatrix!;
  const c = { componentType: 'f16', resultComponentType: 'f32', M: sm.M, N: sm.N, K: sm.K };
  const v = VARIANTS.find((x2) => x2.name === 'staged-8sg-4x2-bk32-f32a')!;
  const problem = shapeProblem(c, v, sm.subgroupSize, s.m, s.n, s.k);
  if (problem) throw new Error(`probe kernel: ${problem}`);
  const pipeline = await getPipeline(ctx, `probe_${v.name}`, subgroupMatrixWgsl(c, v, sm.subgroupSize));
  const dims = paramsUniform(ctx, 'probe.dims', [['u32', s.m], ['u32', s.n], ['u32', s.k]]);
  const blockN = v.sgCols * v.tn * c.N;
  const blockM = v.sgRows * v.tm * c.M;
  return { pipeline, buffers: [x, W16, y, dims], workgroups: [s.n / blockN, s.m / blockM], label: `probe ${v.name}` };
}

/** Both kernels on each shape (the tensor-core one only where q4Matmul chooses it on this device). */
export async function compareQ4Kernels(ctx: GpuContext, shapes: Shape[], o: { reps: number; samples: number }): Promise<ShapeRow[]> {
  const rows: ShapeRow[] = [];
  for (const s of shapes) {
    const rng = new Rng(s.m * 7 + s.k * 3 + s.n);
    const q = quantizeQ4(rng.fill(s.n * s.k, 0.5), s.n, s.k, 'f16');
    const wd = dequantizeQ4(q);
    const xv = rng.fill(s.m * s.k, 1);
    const W = uploadQ4(ctx, `${s.name}.W`, q);
    const x = f32Buffer(ctx, `${s.name}.x`, xv);
    const y = ctx.device.createBuffer({ label: `${s.name}.y`, size: s.m * s.n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const entries = sampleEntries(s.m, s.n, o.samples, s.k);
    let W16: GPUBuffer | undefined;
    const run = async (subgroupMatrix: boolean, blockRows?: 128 | 64, variant?: { staging?: 'loop' | 'unchecked'; noScratch?: boolean; probe?: boolean }): Promise<KernelRun> => {
      const d = variant?.probe
        ? await probeDispatch(ctx, s, x, (W16 ??= await f16Copy(ctx, `${s.name}.W.f16`, W, s.n, s.k)), y)
        : blockRows
        ? await matmulSgm(ctx, { W: (W16 ??= await f16Copy(ctx, `${s.name}.W.f16`, W, s.n, s.k)), x, y, n: s.m, inDim: s.k, outDim: s.n, blockRows, variant })
        : await q4Matmul(ctx, { W, x, y, n: s.m, inDim: s.k, outDim: s.n, subgroupMatrix });
      await timeDispatch(ctx, d, 1); // the first dispatch pays for the driver's compile
      const got = await readF32(ctx, y, s.m * s.n);
      const check = checkEntries((r, c) => got[r * s.n + c], xv, wd, s.k, entries);
      const t = await timeDispatch(ctx, d, o.reps);
      return { label: d.label ?? '', check, ms: round(t.ms), tflops: tflops(s.m, s.n, s.k, t.ms), method: t.method };
    };
    try {
      const tiled = await run(false);
      const chosen = ctx.caps.subgroupMatrix ? await run(true) : null;
      const mma = chosen?.label.startsWith('q4_matmul_mma') ? chosen : null;
      const f16mma = [];
      if (ctx.caps.subgroupMatrix && ctx.caps.f16) {
        // Both heights with the default (unrolled) staging, then the first version's looped staging and a
        // scratch-free build, to tell which part of the block costs what on this GPU.
        // Whole-block shapes also run builds without the scratch epilogue, without bounds, and the probe's own
        // kernel on this device and these buffers: what separates the runtime kernel from the probe's speed.
        const variants: Array<[128 | 64, { staging?: 'loop' | 'unchecked'; noScratch?: boolean; probe?: boolean } | undefined]> = [[128, undefined], [64, undefined], [128, { staging: 'loop' }], [64, { staging: 'loop' }]];
        if (s.m % 128 === 0 && s.n % 128 === 0) variants.push([128, { noScratch: true }], [128, { noScratch: true, staging: 'unchecked' }], [128, { probe: true }]);
        for (const [blockRows, variant] of variants) {
          const r = await run(true, blockRows, variant).catch((e: Error): KernelRun => ({ label: `matmul_mma (${blockRows} rows ${JSON.stringify(variant ?? {})}): ${e.message}`, check: { entries: 0, maxRelError: NaN, maxErrorOverAbsSum: NaN, nonFinite: 0 }, ms: NaN, tflops: NaN, method: 'wall' }));
          f16mma.push({ ...r, speedup: round(tiled.ms / r.ms) });
        }
      }
      rows.push({ shape: `${s.name} ${s.m}x${s.k}x${s.n}`, tiled, mma, speedup: mma ? round(tiled.ms / mma.ms) : null, f16mma });
    } finally {
      W16?.destroy();
      destroyQ4(W);
      x.destroy();
      y.destroy();
    }
  }
  return rows;
}

/** The training backward's input gradients dx [m, n] = dy [m, k] · W [k, n] (512 rows; k = the linear's out). */
export const BACKWARD_SHAPES: Shape[] = [
  { name: 'q dx', m: 512, k: 896, n: 896 },
  { name: 'gate dx', m: 512, k: 4864, n: 896 },
  { name: 'down dx', m: 512, k: 896, n: 4864 },
];

export interface BackwardRow {
  shape: string;
  /** q4MatmulBackwardSplitK as the trainer calls it (with a partials scratch). */
  tiled: KernelRun;
  /** matmulBackwardSgm on the f16 copy, with the same scratch; null without subgroup matrices. */
  mma: KernelRun | null;
  speedup: number | null;
}

/** Both input-gradient kernels on each shape, each checked against float64 and timed as a whole dispatch list. */
export async function compareBackwardKernels(ctx: GpuContext, shapes: Shape[], o: { reps: number; samples: number }): Promise<BackwardRow[]> {
  const rows: BackwardRow[] = [];
  for (const s of shapes) {
    const rng = new Rng(s.m * 5 + s.k * 11 + s.n);
    // W [k = out, n = in]; dy small, as gradients are (the tensor-core kernel scales rows before f16 rounding).
    const q = quantizeQ4(rng.fill(s.k * s.n, 0.5), s.k, s.n, 'f16');
    const wd = dequantizeQ4(q);
    const wt = new Float64Array(s.n * s.k);
    for (let o2 = 0; o2 < s.k; o2++) for (let i = 0; i < s.n; i++) wt[i * s.k + o2] = wd[o2 * s.n + i];
    const dyv = rng.fill(s.m * s.k, 1e-4);
    const W = uploadQ4(ctx, `${s.name}.W`, q);
    const W16 = ctx.caps.subgroupMatrix ? await f16Copy(ctx, `${s.name}.W.f16`, W, s.k, s.n) : null;
    const dy = f32Buffer(ctx, `${s.name}.dy`, dyv);
    const dx = ctx.device.createBuffer({ label: `${s.name}.dx`, size: s.m * s.n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const partials = ctx.device.createBuffer({ label: `${s.name}.partials`, size: Math.min(splitKPartialsBytes(s.m, s.n), ctx.caps.limits.maxStorageBufferBindingSize), usage: GPUBufferUsage.STORAGE });
    const entries = sampleEntries(s.m, s.n, o.samples, s.k);
    const run = async (ds: Dispatch[]): Promise<KernelRun> => {
      const list = ds.map((d) => ({ pipeline: d.pipeline, grid: d.workgroups, bind: ctx.device.createBindGroup({ layout: d.pipeline.getBindGroupLayout(0), entries: d.buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) }) }));
      await timeDispatchList(ctx.device, list, 1);
      const got = await readF32(ctx, dx, s.m * s.n);
      const check = checkEntries((r, c) => got[r * s.n + c], dyv, wt, s.k, entries);
      const t = await timeDispatchList(ctx.device, list, o.reps);
      return { label: ds.map((d) => d.label ?? '').join(' + '), check, ms: round(t.ms), tflops: tflops(s.m, s.n, s.k, t.ms), method: t.method };
    };
    try {
      const args = { dy, dx, n: s.m, inDim: s.n, outDim: s.k, partials };
      const tiled = await run(await q4MatmulBackwardSplitK(ctx, { ...args, W }));
      const mma = W16 ? await run(await matmulBackwardSgm(ctx, { ...args, W: W16 })).catch((e: Error): KernelRun => ({ label: `matmul_backward_mma: ${e.message}`, check: { entries: 0, maxRelError: NaN, maxErrorOverAbsSum: NaN, nonFinite: 0 }, ms: NaN, tflops: NaN, method: 'wall' })) : null;
      rows.push({ shape: `${s.name} ${s.m}x${s.k}x${s.n}`, tiled, mma, speedup: mma ? round(tiled.ms / mma.ms) : null });
    } finally {
      W16?.destroy();
      destroyQ4(W);
      for (const b of [dy, dx, partials]) b.destroy();
    }
  }
  return rows;
}
