import { describe, expect, it } from 'vitest';
import { createStorage, readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { alsoInBrowser, gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr } from '../common/testing';
import { dequantizeQ4, quantizeQ4, type Q4ScaleDtype } from './q4.ref';
import { Q4D_MAX_STORAGE, q4DecodeLinear, q4DecodeStorage, type Q4DecodeArgs } from './q4decode';
import { q4DecodeRef, type LoraRef } from './q4decode.ref';
import { destroyQ4, uploadQ4 } from './q4weight';

// Float64 reference over the exactly dequantized weights: the GPU's only error is f32 accumulation (and the
// f32 RMSNorm factor), well under 5e-5 of the largest output at these widths.
const TOL = 5e-5;

interface Case {
  name: string;
  n: number;
  inDim: number;
  /** Segment rows, or the intermediate size with swiglu. */
  segs?: number[];
  swiglu?: number;
  bias?: 'packed' | 'separate';
  norm?: 'plain' | 'xn';
  residual?: 'separate' | 'inplace';
  scale: Q4ScaleDtype;
  /** Rows of the stored matrix before the window. */
  rowBase?: number;
  rowsPerWorkgroup?: number;
  /** K slices per row pair in the subgroup kernel (default from inDim). */
  kSplit?: number;
  /** LoRA up epilogue on these output slots (segments, or 0 = gate / 1 = up with swiglu), rank 3. */
  lora?: number[];
  /** Slot 0's LoRA down computed in the kernel from x and A (no t given). */
  loraIn?: boolean;
  /** LoRA rank (default 3). */
  rank?: number;
  /** Row r of x multiplied by rowScale[r]: rows whose sum of squares overflows f32 (the norm pre-scales them). */
  rowScale?: number[];
  /** Runs besides the subgroup kernel on the first weight path (with a norm: rows cached in workgroup memory). */
  also?: Run[];
  /** Runs in the browser project although its scales are f32 (it exercises a limit of Chromium's device). */
  inBrowser?: true;
}

/**
 * A run of a case: `sg: false` the kernel without subgroups; `registers` with a norm, normalising in registers
 * instead of caching the rows; `packed` the packed-u32 f16 path where the adapter also has native f16.
 */
interface Run {
  sg?: false;
  registers?: true;
  packed?: true;
}

// Every case runs on the subgroup kernel; the other kernels and paths each run a subset that still reaches
// every part of their code (on a software GPU a case costs its shader's compile, up to a minute at 8 rows):
// - without subgroups: every prologue / epilogue kind (norm cached and in registers, xn, rows near f32's
//   limit, biases, both residuals, swiglu, LoRA on segments and on gate/up, 1 to 8 rows, a lane walking
//   several groups); K slices exist only in the subgroup kernel;
// - normalised in registers: c_attn with xn, swiglu with and without LoRA, rows near f32's limit, wide K;
// - packed f16 scales (where native f16 also runs; the browser project runs every case packed): both
//   kernels, segments, swiglu, norm + xn, LoRA. f32 scales read no f16, so their WGSL is the same on both paths.
const NO_SG: Run = { sg: false };
const REG: Run = { registers: true };
const NO_SG_REG: Run = { sg: false, registers: true };
const PACKED: Run = { packed: true };
const PACKED_NO_SG: Run = { packed: true, sg: false };

const CASES: Case[] = [
  { name: 'plain', n: 1, inDim: 64, segs: [41], scale: 'f16', also: [NO_SG, PACKED, PACKED_NO_SG] },
  { name: 'c_attn-like: norm + xn + 3 segments, biases packed with the norm weight', n: 2, inDim: 96, segs: [37, 9, 9], bias: 'packed', norm: 'xn', scale: 'f32', rowBase: 5, also: [REG, NO_SG, NO_SG_REG] },
  { name: '2 segments, separate biases, no norm', n: 3, inDim: 64, segs: [48, 17], bias: 'separate', scale: 'f16', also: [NO_SG] },
  { name: 'residual from another buffer', n: 4, inDim: 128, segs: [70], residual: 'separate', scale: 'f16', also: [NO_SG] },
  { name: 'residual in place, with norm', n: 3, inDim: 64, segs: [200], residual: 'inplace', norm: 'plain', scale: 'f32', also: [NO_SG] },
  { name: 'swiglu with norm', n: 1, inDim: 64, swiglu: 45, norm: 'plain', scale: 'f16', rowBase: 3, also: [REG, NO_SG, NO_SG_REG, PACKED] },
  { name: 'swiglu, 4 rows, no norm', n: 4, inDim: 96, swiglu: 61, scale: 'f32', rowsPerWorkgroup: 64, also: [NO_SG] },
  { name: 'o/down-like: residual + LoRA up', n: 2, inDim: 96, segs: [70], residual: 'separate', lora: [0], scale: 'f16', also: [NO_SG, PACKED] },
  { name: 'in-place residual + LoRA up', n: 1, inDim: 64, segs: [33], residual: 'inplace', lora: [0], scale: 'f32', also: [NO_SG] },
  { name: 'swiglu + LoRA on gate and up', n: 2, inDim: 64, swiglu: 45, lora: [0, 1], scale: 'f16', rowBase: 2, also: [NO_SG, PACKED_NO_SG] },
  { name: 'swiglu + LoRA on up only, with norm', n: 1, inDim: 64, swiglu: 40, lora: [1], norm: 'plain', scale: 'f32', also: [REG, NO_SG] },
  { name: 'segments, LoRA on the second', n: 3, inDim: 64, segs: [21, 30], bias: 'packed', lora: [1], scale: 'f16', also: [NO_SG] },
  // The decode forward's c_attn under a q/k/v LoRA (13 storage bindings): x is the LoRA group's stored
  // rmsnorm(x), biases packed, a LoRA up on each segment (the segment boundaries pick B and t).
  { name: 'c_attn-like after the LoRA group: 3 segments each with a LoRA up, biases packed', n: 2, inDim: 96, segs: [37, 9, 9], bias: 'packed', lora: [0, 1, 2], scale: 'f16', also: [NO_SG] },
  // Where the device binds only 10 (Chromium's SwiftShader): the q segment's LoRA up alone.
  { name: 'c_attn-like after the LoRA group: LoRA up on the first of 3 segments only', n: 1, inDim: 96, segs: [37, 9, 9], bias: 'packed', lora: [0], scale: 'f32', inBrowser: true },
  // o-like with the LoRA down in the kernel (t = x · A^T per workgroup): rank 3, and the largest rank at 7 rows.
  { name: 'o-like: residual + LoRA down and up in the kernel', n: 2, inDim: 96, segs: [70], residual: 'separate', lora: [0], loraIn: true, scale: 'f16', also: [NO_SG] },
  { name: 'o-like, 7 rows: LoRA down and up in the kernel at rank 64', n: 7, inDim: 128, segs: [33], residual: 'inplace', lora: [0], loraIn: true, rank: 64, scale: 'f32', also: [NO_SG] },
  { name: 'gate/up segments with norm + xn', n: 2, inDim: 128, segs: [40, 40], norm: 'xn', scale: 'f16', rowsPerWorkgroup: 2, also: [NO_SG, PACKED] },
  // Decode steps of a whole Flow-GRPO group (8 sequences): c_attn, o/down and gate/up shapes.
  { name: 'c_attn-like, 8 rows', n: 8, inDim: 96, segs: [37, 9, 9], bias: 'packed', norm: 'xn', scale: 'f16', rowBase: 1 },
  { name: 'o/down-like, 7 rows: residual + LoRA up', n: 7, inDim: 128, segs: [70], residual: 'separate', lora: [0], scale: 'f32' },
  { name: 'swiglu + LoRA on gate and up, 8 rows', n: 8, inDim: 64, swiglu: 45, lora: [0, 1], scale: 'f16', rowsPerWorkgroup: 8, also: [NO_SG] },
  // Finite rows whose squares overflow f32 (up to ~2.4e38, near f32's limit) between ordinary ones.
  { name: 'c_attn-like, rows near f32\'s limit', n: 3, inDim: 96, segs: [37, 9, 9], bias: 'packed', norm: 'xn', scale: 'f16', rowScale: [1e20, 1, 3e37], also: [NO_SG] },
  // K split over slices whose sums meet in workgroup memory (the subgroup kernel's down_proj shape), with
  // more groups than one pass of a subgroup's lanes takes, so each lane prefetches a next group.
  { name: 'down-like, K in 4 slices: residual + LoRA up', n: 2, inDim: 1056, segs: [21], residual: 'separate', lora: [0], scale: 'f16', kSplit: 4, also: [NO_SG] },
  { name: 'wide K, default slices: swiglu + LoRA on gate, norm', n: 3, inDim: 2080, swiglu: 13, lora: [0], norm: 'plain', scale: 'f32', also: [REG] },
  { name: 'c_attn-like, 8 rows, K in 8 slices', n: 8, inDim: 512, segs: [37, 9, 9], bias: 'packed', norm: 'xn', scale: 'f16', kSplit: 8 },
  { name: 'segments, LoRA on the second, K in 2 slices', n: 5, inDim: 256, segs: [30, 21], bias: 'packed', lora: [1], scale: 'f32', kSplit: 2 },
  { name: 'swiglu with norm, 4 rows, two of them huge', n: 4, inDim: 64, swiglu: 45, norm: 'plain', scale: 'f32', rowScale: [1, 1e25, 1, 2e36], also: [REG, NO_SG_REG] },
];

describe('q4DecodeLinear (fused decode linear) vs float64', async () => {
  const paths = await weightPaths();
  const hasSg = (await gpuFor(paths[0])).caps.subgroups;
  // Each case's runs on this adapter, without repeats: where a kernel or path is missing, or f32 scales make
  // the packed path's WGSL the native one's, a run is the same program as one already listed.
  // In Chromium, the f16-scale cases (the packed path's own WGSL) and the one binding the 10 storage buffers
  // SwiftShader grants; f32 scales' WGSL is what Dawn already runs (they took ~25 of the browser's 65 s).
  const here = alsoInBrowser([...CASES.entries()], ([, c]) => c.scale === 'f16' || c.inBrowser === true);
  const runs = here.flatMap(([ci, c]) => {
    const seen = new Set<string>();
    return [{}, ...(c.also ?? [])].flatMap((r: Run) => {
      const path = r.packed && c.scale === 'f16' ? paths[paths.length - 1] : paths[0];
      const subgroups = hasSg && r.sg !== false;
      const cacheX = c.norm ? !r.registers : undefined;
      const key = `${path} ${subgroups} ${cacheX}`;
      if (seen.has(key)) return [];
      seen.add(key);
      return [{ ci, c, path, subgroups, cacheX }];
    });
  });
  // Cases binding more storage buffers than the adapter grants (Chromium's SwiftShader: 10) cannot run there.
  const maxStorage = (await gpuFor(paths[0])).caps.limits.maxStorageBuffersPerShaderStage;
  const storage = (c: Case) => {
    const segs = c.swiglu ? 2 : c.segs!.length;
    const params = c.bias === 'packed' ? 1 : Number(!!c.norm) + (c.bias === 'separate' ? segs : 0);
    return q4DecodeStorage({
      params, storeXn: c.norm === 'xn', separateResidual: c.residual === 'separate', swiglu: !!c.swiglu, segments: segs,
      lora: Array.from({ length: segs }, (_, s) => !!c.lora?.includes(s)),
    });
  };
  for (const { ci, c, path, subgroups, cacheX } of runs) {
    it.skipIf(storage(c) > maxStorage)(`${path}${subgroups ? ' subgroups' : ' no-subgroups'}: ${c.name}${cacheX === false ? ', normalised in registers' : ''} (n=${c.n} in=${c.inDim} scale=${c.scale})`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(100 + ci);
      const out = c.swiglu ? 2 * c.swiglu : c.segs!.reduce((a, b) => a + b, 0);
      const base = c.rowBase ?? 0;
      const total = base + out + 3;
      const q = quantizeQ4(rng.fill(total * c.inDim, 0.5), total, c.inDim, c.scale);
      const Wd = dequantizeQ4(q, base, out);
      const x = rng.fill(c.n * c.inDim, 2);
      if (c.rowScale) x.forEach((v, i) => (x[i] = v * c.rowScale![Math.floor(i / c.inDim)]));
      const normW = Array.from(rng.fill(c.inDim, 0.2), (v) => v + 1);
      const biases = (c.segs ?? []).map((r) => rng.fill(r));
      const residual = c.residual ? rng.fill(c.n * out) : undefined;
      const R = c.rank ?? 3;
      const slotRows = c.swiglu ? [c.swiglu, c.swiglu] : c.segs!;
      const loraRef: Array<LoraRef | undefined> = slotRows.map((rows, s) => (c.lora?.includes(s) ? { t: rng.fill(c.n * R), B: rng.fill(rows * R), rank: R, scale: 0.5 + s } : undefined));
      // In-kernel LoRA down: A random, the reference's t = x · A^T in float64.
      const A = c.loraIn ? rng.fill(R * c.inDim, 0.3) : undefined;
      if (A) {
        const t = new Float64Array(c.n * R);
        for (let r = 0; r < c.n; r++) for (let j = 0; j < R; j++) for (let k = 0; k < c.inDim; k++) t[r * R + j] += x[r * c.inDim + k] * A[j * c.inDim + k];
        loraRef[0]!.t = t;
      }
      const made: GPUBuffer[] = [];
      const keep = (b: GPUBuffer) => (made.push(b), b);
      const loraGpu = loraRef.map((l, s) => l && {
        ...(s === 0 && A ? { A: keep(f32Buffer(ctx, 'A', A)) } : { t: keep(f32Buffer(ctx, `t${s}`, l.t)) }), B: keep(f32Buffer(ctx, `B${s}`, l.B)), rank: R, scale: l.scale,
      });
      const W = uploadQ4(ctx, 'W', q);
      const xb = keep(f32Buffer(ctx, 'x', x));
      // Packed: [junk 3 | norm w | bias0 | bias1 | bias2], as the decode forward packs them.
      const packed = keep(f32Buffer(ctx, 'params', [1, 2, 3, ...normW, ...biases.flatMap((b) => Array.from(b))]));
      const args: Q4DecodeArgs = { W: { ...W, rowBase: base }, x: xb, n: c.n, inDim: c.inDim, subgroups, rowsPerWorkgroup: c.rowsPerWorkgroup, kSplit: c.kSplit, cacheX };
      if (c.norm) {
        const w = c.bias === 'packed' ? { buffer: packed, offset: 3 } : { buffer: keep(f32Buffer(ctx, 'normW', normW)) };
        args.norm = { w, eps: 1e-5, xn: c.norm === 'xn' ? keep(createStorage(ctx, 'xn', c.n * c.inDim * 4)) : undefined };
      }
      if (c.swiglu) args.swiglu = { act: keep(createStorage(ctx, 'act', c.n * c.swiglu * 4)), intermediate: c.swiglu, gateLora: loraGpu[0], upLora: loraGpu[1] };
      else {
        let off = 3 + c.inDim;
        args.outputs = c.segs!.map((rows, s) => {
          const y = keep(c.residual === 'inplace' ? f32Buffer(ctx, `y${s}`, residual!) : createStorage(ctx, `y${s}`, c.n * rows * 4));
          let bias;
          if (c.bias === 'packed') bias = { buffer: packed, offset: off };
          else if (c.bias === 'separate') bias = { buffer: keep(f32Buffer(ctx, `b${s}`, biases[s])) };
          off += rows;
          return { y, rows, bias, lora: loraGpu[s] };
        });
        if (c.residual === 'separate') args.residual = keep(f32Buffer(ctx, 'res', residual!));
        if (c.residual === 'inplace') args.residual = args.outputs[0].y;
      }
      const d = await q4DecodeLinear(ctx, args);
      expect(d.label?.includes('_sg')).toBe(subgroups);
      expect(d.buffers.length - 1, 'storage bindings (all but the uniform)').toBe(storage(c));
      expect(d.label?.includes('_normcached')).toBe(cacheX === true);
      submitDispatches(ctx, [d]);
      const want = q4DecodeRef({
        Wd, x, n: c.n, inDim: c.inDim, norm: c.norm ? { w: normW, eps: 1e-5 } : undefined,
        segments: c.segs?.map((rows, s) => ({ rows, bias: c.bias ? biases[s] : undefined, lora: loraRef[s] })), residual, swiglu: c.swiglu,
        gateLora: c.swiglu ? loraRef[0] : undefined, upLora: c.swiglu ? loraRef[1] : undefined,
      });
      const got = c.swiglu ? [await readF32(ctx, args.swiglu!.act, c.n * c.swiglu)] : await Promise.all(args.outputs!.map((s) => readF32(ctx, s.y, c.n * s.rows)));
      want.outs.forEach((w, s) => expect(relMaxErr(got[s], w), `segment ${s}`).toBeLessThan(TOL));
      if (c.norm === 'xn') expect(relMaxErr(await readF32(ctx, args.norm!.xn!, c.n * c.inDim), want.xn!)).toBeLessThan(1e-6);
      destroyQ4(W);
      for (const b of made) b.destroy();
    });
  }

  it('bad arguments fail naming the buffer or setting at fault', async () => {
    const ctx = await gpuFor('packed');
    const q = quantizeQ4(new Rng(1).fill(64 * 64), 64, 64);
    const W = uploadQ4(ctx, 'Wt', q);
    const buf = (name: string, floats: number) => createStorage(ctx, name, floats * 4);
    const x = buf('xin', 2 * 64);
    const y = (name: string) => ({ y: buf(name, 2 * 16), rows: 16 });
    await expect(q4DecodeLinear(ctx, { W, x, n: 2, inDim: 64, outputs: [{ y: buf('small', 8), rows: 16 }] })).rejects.toThrow(/outputs\[0\]\.y \('small'/);
    await expect(q4DecodeLinear(ctx, { W, x: buf('tinyx', 10), n: 2, inDim: 64, outputs: [y('y')] })).rejects.toThrow(/x \('tinyx'/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 9, inDim: 64, outputs: [y('y')] })).rejects.toThrow(/n must be <= 8, got 9/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [y('a'), y('b'), y('c'), y('d')] })).rejects.toThrow(/1\.\.3 output segments, got 4/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [{ y: buf('y', 100), rows: 100 }] })).rejects.toThrow(/q_weight \('Wt\.q_weight'/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64 })).rejects.toThrow(/exactly one of 'outputs' and 'swiglu'/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [{ y: x, rows: 16 }] })).rejects.toThrow(/'xin' is also x/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [y('y')], norm: { w: { buffer: buf('nw', 64), offset: 10 }, eps: 1e-6 } })).rejects.toThrow(/norm\.w \('nw'/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [y('p'), y('q')], residual: buf('r', 64) })).rejects.toThrow(/residual needs exactly one output segment/);
    await expect(
      q4DecodeLinear(ctx, { W, x, n: 2, inDim: 64, outputs: [{ ...y('y'), lora: { t: buf('tshort', 3), B: buf('Bl', 64), rank: 4, scale: 1 } }] }),
    ).rejects.toThrow(/outputs\[0\]\.lora\.t \('tshort'/);
    await expect(
      q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, swiglu: { act: buf('act', 8), intermediate: 8, upLora: { t: buf('tu', 4), B: buf('Bu', 4), rank: 4, scale: 1 } } }),
    ).rejects.toThrow(/swiglu\.upLora\.B \('Bu'/);
    // A LoRA down in the kernel: exactly one of t and A, one segment without a norm, rank <= 64.
    const la = (rank: number, extra: object = {}) => ({ A: buf('Al', rank * 64), B: buf('Bl2', 16 * rank), rank, scale: 1, ...extra });
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [{ ...y('y'), lora: la(2, { t: buf('tl', 2) }) }] })).rejects.toThrow(/outputs\[0\]\.lora needs exactly one of t .* and A/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [{ ...y('y'), lora: la(2) }], norm: { w: { buffer: buf('nw3', 64) }, eps: 1e-6 } })).rejects.toThrow(/outputs\[0\]\.lora\.A .* without swiglu or a norm/);
    await expect(q4DecodeLinear(ctx, { W, x, n: 1, inDim: 64, outputs: [{ ...y('y'), lora: la(65) }] })).rejects.toThrow(/rank 65 exceeds 64/);
    // t of 8 rows and its slice sums need more than 4 KiB of workgroup memory on either kernel.
    const smallWg = { ...ctx, caps: { ...ctx.caps, limits: { ...ctx.caps.limits, maxComputeWorkgroupStorageSize: 4096 } } };
    await expect(q4DecodeLinear(smallWg, { W, x: buf('x8', 8 * 64), n: 8, inDim: 64, outputs: [{ y: buf('y8', 8 * 16), rows: 16, lora: la(2) }] })).rejects.toThrow(/lora\.A\) needs \d+ B of workgroup memory, the device allows 4096/);
    // Norm weight, three biases and xn in separate buffers: 11 storage bindings, on a device that grants
    // WebGPU's default 8 (same device, narrower limit).
    const sep = (name: string) => ({ buffer: buf(name, 16) });
    const narrow = { ...ctx, caps: { ...ctx.caps, limits: { ...ctx.caps.limits, maxStorageBuffersPerShaderStage: Q4D_MAX_STORAGE } } };
    await expect(
      q4DecodeLinear(narrow, {
        W, x, n: 1, inDim: 64, norm: { w: { buffer: buf('nw2', 64) }, eps: 1e-6, xn: buf('xn', 64) },
        outputs: [{ ...y('q'), bias: sep('bq') }, { ...y('k'), bias: sep('bk') }, { ...y('v'), bias: sep('bv') }],
      }),
    ).rejects.toThrow(/11 storage buffers \(Wq, S, x, P0, P1, P2, P3, xn, y0, y1, y2\) exceed the device's 8; pack the norm weight and biases/);
    destroyQ4(W);
  });
});
