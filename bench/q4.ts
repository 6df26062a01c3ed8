// npx tsx bench/q4.ts [--reps MAX] [--target-ms T] [--rows R] [--only q_proj,lm_head,...]: decode-time (N = 1) speed of the 4-bit matvec against
// the f16 kernels on Qwen2.5-0.5B's linear shapes, printed as JSON on stdout (progress on stderr).
// Decode is memory-bound, so the figure of merit is GB/s over the weight bytes each kernel must read:
// q4 = q_weight + q_scale (about 0.28 of f16's bytes), f16 = 2 bytes per weight. Per-token totals are 24
// layers x (q, k, v, o, gate, up, down) + the tied LM head. Each time is the wall clock of R back-to-back
// dispatches in one submission divided by R, after a warm-up (compiles, first-touch); R is chosen so a
// measurement lasts about --target-ms.
// On a software adapter (lavapipe, SwiftShader) these are CPU numbers, useful only as relative figures.
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { createStorage, uploadStorage } from '../src/gpu/buffers';
import { encodeDispatch, type Dispatch } from '../src/gpu/pipelines';
import { matvec } from '../src/kernels/matvec/matvec';
import { matmul } from '../src/kernels/matmul/matmul';
import { q4Matvec } from '../src/kernels/q4/q4matmul';
import { q4Bytes } from '../src/kernels/q4/q4.ref';
import { Q4_ROWS } from '../src/kernels/q4/q4matmul.wgsl';
import type { Q4Weight } from '../src/kernels/q4/q4weight';
import { toF16Array } from '../src/util/half';
import { Rng } from '../src/util/rng';
import { flag, log } from './flags';

const H = 896;
const I = 4864;
const V = 151936;
const LAYERS = 24;
/**
 * [name, out, in, times per token, layout] for Qwen2.5-0.5B (14 query heads, 2 KV heads, head dim 64).
 * 'hf': the unfused Hugging Face linears; 'mlc': the fused ones a web-llm download holds (c_attn = q|k|v,
 * gate_up_proj = gate|up); 'both': in either. A token is one of the two sets plus the tied LM head.
 */
const SHAPES: Array<[string, number, number, number, 'hf' | 'mlc' | 'both']> = [
  ['q_proj', 896, H, LAYERS, 'hf'],
  ['k_proj', 128, H, LAYERS, 'hf'],
  ['v_proj', 128, H, LAYERS, 'hf'],
  ['c_attn', 1152, H, LAYERS, 'mlc'],
  ['o_proj', H, 896, LAYERS, 'both'],
  ['gate_proj', I, H, LAYERS, 'hf'],
  ['up_proj', I, H, LAYERS, 'hf'],
  ['gate_up_proj', 2 * I, H, LAYERS, 'mlc'],
  ['down_proj', H, I, LAYERS, 'both'],
  ['lm_head', V, H, 1, 'both'],
];

/**
 * ms per repetition of `ds`: a warm-up run, then as many repetitions (up to `maxReps`) as fill about
 * `targetMs`, so short kernels are not lost in submission overhead and long ones do not take minutes.
 */
async function time(ctx: GpuContext, ds: Dispatch[], maxReps: number, targetMs: number): Promise<number> {
  const run = async (r: number) => {
    const enc = ctx.device.createCommandEncoder();
    for (let i = 0; i < r; i++) for (const d of ds) encodeDispatch(ctx, enc, d);
    const t0 = performance.now();
    ctx.device.queue.submit([enc.finish()]);
    await ctx.device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  const first = await run(1);
  const reps = Math.max(1, Math.min(maxReps, Math.ceil(targetMs / Math.max(first, 1e-3))));
  return (await run(reps)) / reps;
}

/** A big buffer filled by tiling a small random block (values do not change the speed). */
function tiled<T extends Uint16Array | Uint32Array>(make: (n: number) => T, n: number, block: T): T {
  const a = make(n);
  const b = Math.min(block.length, n);
  a.set(block.subarray(0, b));
  for (let filled = b; filled < n; filled *= 2) a.copyWithin(filled, 0, Math.min(filled, n - filled));
  return a;
}

interface Row {
  shape: string;
  layout: 'hf' | 'mlc' | 'both';
  out: number;
  in: number;
  perToken: number;
  q4Bytes: number;
  f16Bytes: number;
  /** ms per call */
  q4SubgroupsMs?: number;
  q4NoSubgroupsMs: number;
  f16MatvecMs: number;
  f16MatmulN1Ms: number;
  q4GBs: number;
  f16BestGBs: number;
  speedupVsBestF16: number;
}

async function main(): Promise<void> {
  const ctx = await requestGpu();
  const soft = ctx.caps.isSoftware;
  const reps = Number(flag('reps', '200'));
  const targetMs = Number(flag('target-ms', soft ? '400' : '100'));
  const only = flag('only', '').split(',').filter(Boolean);
  const rowsPerWorkgroup = Number(flag('rows', String(Q4_ROWS)));
  log(`adapter: ${ctx.caps.description || ctx.caps.vendor} (software: ${soft}), shader-f16: ${ctx.caps.f16}, subgroups: ${ctx.caps.subgroups}, reps ${reps}`);
  const rng = new Rng(1);
  const wordBlock = Uint32Array.from({ length: 4099 }, () => Math.floor(rng.next() * 2 ** 32));
  const scaleBlock = toF16Array(Float32Array.from({ length: 4099 }, () => 0.002 + 0.002 * rng.next()));
  const halfBlock = toF16Array(rng.fill(4099, 0.02));
  const maxBinding = ctx.caps.limits.maxStorageBufferBindingSize;
  const rows: Row[] = [];
  for (const [shape, out, inDim, perToken, layout] of SHAPES) {
    if (only.length && !only.includes(shape)) continue;
    const x = uploadStorage(ctx, 'x', rng.fill(inDim));
    const y = createStorage(ctx, 'y', out * 4);
    // q4: one pair of buffers (the LM head's 68 MiB + 4 MiB fits one binding).
    const W: Q4Weight = {
      qWeight: uploadStorage(ctx, `${shape}.q_weight`, tiled((n) => new Uint32Array(n), (out * inDim) / 8, wordBlock)),
      qScale: uploadStorage(ctx, `${shape}.q_scale`, tiled((n) => new Uint16Array(n), (out * inDim) / 32, scaleBlock)),
    };
    const q4Ms: Record<string, number> = {};
    for (const sg of ctx.caps.subgroups ? [true, false] : [false]) {
      q4Ms[sg ? 'sg' : 'plain'] = await time(ctx, [await q4Matvec(ctx, { W, x, y, rows: out, cols: inDim, subgroups: sg, rowsPerWorkgroup })], reps, targetMs);
    }
    W.qWeight.destroy();
    W.qScale.destroy();
    // f16: split into row chunks that fit one storage binding, as the engine does for the LM head.
    const chunkRows = Math.min(out, Math.floor(maxBinding / (inDim * 2)));
    const chunks: Array<{ buf: GPUBuffer; off: number; cnt: number; y: GPUBuffer }> = [];
    for (let off = 0; off < out; off += chunkRows) {
      const cnt = Math.min(chunkRows, out - off);
      const buf = uploadStorage(ctx, `${shape}.f16[${off}]`, tiled((n) => new Uint16Array(n), cnt * inDim, halfBlock));
      chunks.push({ buf, off, cnt, y: createStorage(ctx, 'ychunk', cnt * 4) });
    }
    const mv = await Promise.all(chunks.map((c) => matvec(ctx, { W: c.buf, x, y: c.y, rows: c.cnt, cols: inDim })));
    const f16MatvecMs = await time(ctx, mv, reps, targetMs);
    const mm = await Promise.all(chunks.map((c) => matmul(ctx, { W: c.buf, x, y, n: 1, inDim, outDim: c.cnt, yStride: out, yOffset: c.off })));
    const f16MatmulN1Ms = await time(ctx, mm, reps, targetMs);
    for (const c of chunks) {
      c.buf.destroy();
      c.y.destroy();
    }
    x.destroy();
    y.destroy();
    const qb = q4Bytes(out, inDim);
    const fb = out * inDim * 2;
    const q4Best = Math.min(...Object.values(q4Ms));
    const f16Best = Math.min(f16MatvecMs, f16MatmulN1Ms);
    const r: Row = {
      shape,
      layout,
      out,
      in: inDim,
      perToken,
      q4Bytes: qb,
      f16Bytes: fb,
      q4SubgroupsMs: q4Ms.sg,
      q4NoSubgroupsMs: q4Ms.plain,
      f16MatvecMs,
      f16MatmulN1Ms,
      q4GBs: qb / (q4Best * 1e6),
      f16BestGBs: fb / (f16Best * 1e6),
      speedupVsBestF16: f16Best / q4Best,
    };
    log(`${shape} [${out}, ${inDim}]: q4 ${q4Best.toFixed(3)} ms (${r.q4GBs.toFixed(2)} GB/s) vs f16 ${f16Best.toFixed(3)} ms (${r.f16BestGBs.toFixed(2)} GB/s)`);
    rows.push(r);
  }
  const perToken = (layout: 'hf' | 'mlc') => {
    const set = rows.filter((r) => r.layout === layout || r.layout === 'both');
    const total = (f: (r: Row) => number) => set.reduce((a, r) => a + r.perToken * f(r), 0);
    const q4Ms = total((r) => Math.min(r.q4SubgroupsMs ?? Infinity, r.q4NoSubgroupsMs));
    const f16Ms = total((r) => Math.min(r.f16MatvecMs, r.f16MatmulN1Ms));
    return {
      shapesIncluded: set.map((r) => r.shape),
      q4Ms,
      f16Ms,
      q4WeightBytes: total((r) => r.q4Bytes),
      f16WeightBytes: total((r) => r.f16Bytes),
      q4GBs: total((r) => r.q4Bytes) / (q4Ms * 1e6),
      f16GBs: total((r) => r.f16Bytes) / (f16Ms * 1e6),
      speedup: f16Ms / q4Ms,
    };
  };
  const result = {
    adapter: { description: ctx.caps.description, vendor: ctx.caps.vendor, software: soft, f16: ctx.caps.f16, subgroups: ctx.caps.subgroups },
    note: soft ? 'software adapter: CPU-bound numbers, not representative of a GPU' : 'hardware adapter',
    q4RowsPerWorkgroup: rowsPerWorkgroup,
    maxReps: reps,
    targetMsPerMeasurement: targetMs,
    shapes: rows,
    /** Decode matvec time per token (24 layers + LM head), unfused (Hugging Face) and fused (MLC) linears. */
    perTokenUnfused: perToken('hf'),
    perTokenFused: perToken('mlc'),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  ctx.device.destroy();
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
