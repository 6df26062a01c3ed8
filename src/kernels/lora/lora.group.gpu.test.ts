// Grouped LoRA against the float64 reference, and bit for bit against the per-module dispatches it
// replaces in the forward pass (so grouping changes no result anywhere, prefill seeds included).
import { describe, expect, it } from 'vitest';
import type { GpuContext } from '../../gpu/device';
import { readF32 } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { bitDiffCount, emptyF32, f32Buffer, relMaxErr } from '../common/testing';
import { loraDown, loraUp } from './lora';
import { loraDownGroup, loraDownGroupStorage, loraUpGroup } from './lora.group';
import { loraRef } from './lora.ref';

interface Module {
  out: number;
  r: number;
  A: Float32Array;
  B: Float32Array;
  y0: Float32Array;
  scale: number;
}

function modules(rng: Rng, inDim: number, shapes: Array<[out: number, r: number]>, n: number): Module[] {
  return shapes.map(([out, r]) => ({ out, r, A: rng.fill(r * inDim), B: rng.fill(out * r), y0: rng.fill(n * out), scale: 16 / r }));
}

/** Runs `mods` grouped (grouped=true) or one by one; returns each module's t and y. */
async function run(ctx: GpuContext, x: Float32Array, n: number, inDim: number, mods: Module[], grouped: boolean, subgroups: boolean) {
  const made: GPUBuffer[] = [];
  const keep = (b: GPUBuffer) => (made.push(b), b);
  const xb = keep(f32Buffer(ctx, 'x', x));
  const bufs = mods.map((m, i) => ({
    A: keep(f32Buffer(ctx, `A${i}`, m.A)),
    B: keep(f32Buffer(ctx, `B${i}`, m.B)),
    y: keep(f32Buffer(ctx, `y${i}`, m.y0)),
    t: keep(emptyF32(ctx, `t${i}`, n * m.r)),
  }));
  if (grouped) {
    const down = await loraDownGroup(ctx, { x: xb, n, inDim, subgroups, modules: mods.map((m, i) => ({ A: bufs[i].A, t: bufs[i].t, rank: m.r })) });
    const ups = [];
    for (let i = 0; i < mods.length; i += 2) {
      const pair = mods.slice(i, i + 2);
      if (pair.length === 2) ups.push(await loraUpGroup(ctx, { n, modules: pair.map((m, j) => ({ t: bufs[i + j].t, B: bufs[i + j].B, y: bufs[i + j].y, outDim: m.out, rank: m.r, scale: m.scale })) }));
      else ups.push(await loraUp(ctx, { t: bufs[i].t, B: bufs[i].B, y: bufs[i].y, n, outDim: pair[0].out, rank: pair[0].r, scale: pair[0].scale }));
    }
    submitDispatches(ctx, [down, ...ups]);
  } else {
    const ds = [];
    for (const [i, m] of mods.entries()) {
      ds.push(await loraDown(ctx, { x: xb, A: bufs[i].A, t: bufs[i].t, n, inDim, rank: m.r, subgroups }));
      ds.push(await loraUp(ctx, { t: bufs[i].t, B: bufs[i].B, y: bufs[i].y, n, outDim: m.out, rank: m.r, scale: m.scale }));
    }
    submitDispatches(ctx, ds);
  }
  const out = [];
  for (const [i, m] of mods.entries()) out.push({ t: await readF32(ctx, bufs[i].t, n * m.r), y: await readF32(ctx, bufs[i].y, n * m.out) });
  for (const b of made) b.destroy();
  return out;
}

describe('grouped lora kernels', async () => {
  for (const path of await weightPaths()) {
    // q/k/v-like (three modules, unequal outputs, unequal ranks) and gate/up-like (two), odd sizes; decode's
    // row counts (1, 3, 5, 8) and a prefill's (70), whose 4-rank tiles must not straddle two modules.
    const cases: Array<[n: number, inDim: number, shapes: Array<[number, number]>]> = [
      [1, 70, [[70, 8], [10, 8], [10, 8]]],
      [5, 33, [[17, 4], [9, 2], [40, 16]]],
      [3, 130, [[260, 8], [260, 3]]],
      [2, 1, [[1, 1], [3, 1]]],
      [8, 1000, [[33, 16], [20, 16]]],
      [70, 300, [[17, 6], [9, 2], [40, 16]]],
    ];
    const sgs = (await gpuFor(path)).caps.subgroups ? [true, false] : [false];
    for (const subgroups of sgs) for (const [n, inDim, shapes] of cases) {
      it(`${path}${subgroups ? ' subgroups' : ''}: n=${n} in=${inDim} modules ${JSON.stringify(shapes)}: float64 reference, and the bits of one-by-one`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(n * 31 + inDim + shapes.length);
        const x = rng.fill(n * inDim);
        const mods = modules(rng, inDim, shapes, n);
        const grouped = await run(ctx, x, n, inDim, mods, true, subgroups);
        const single = await run(ctx, x, n, inDim, mods, false, subgroups);
        mods.forEach((m, i) => {
          const want = loraRef(x, m.A, m.B, m.y0, n, inDim, m.out, m.r, m.scale);
          expect(relMaxErr(grouped[i].t, want.t), `t${i}`).toBeLessThan(1e-5);
          expect(relMaxErr(grouped[i].y, want.y), `y${i}`).toBeLessThan(1e-5);
          expect(bitDiffCount(grouped[i].t, single[i].t), `t${i} bits`).toBe(0);
          expect(bitDiffCount(grouped[i].y, single[i].y), `y${i} bits`).toBe(0);
        });
      });
    }

    it(`${path}: refuses groups it cannot bind, naming the kernel`, async () => {
      const ctx = await gpuFor(path);
      const b = emptyF32(ctx, 'b', 4);
      const m = { A: b, t: b, rank: 1 };
      await expect(loraDownGroup(ctx, { x: b, n: 1, inDim: 1, modules: [m] })).rejects.toThrow(/loraDownGroup: groups hold 2 to 3 modules, got 1/);
      await expect(loraDownGroup(ctx, { x: b, n: 1, inDim: 1, modules: [m, m, m, m] })).rejects.toThrow(/got 4/);
      await expect(loraDownGroup(ctx, { x: b, n: 1, inDim: 1, modules: [m, { ...m, rank: 0 }] })).rejects.toThrow(/modules\[1\]\.rank/);
      const u = { t: b, B: b, y: b, outDim: 1, rank: 1, scale: 1 };
      await expect(loraUpGroup(ctx, { n: 1, modules: [u, u, u] })).rejects.toThrow(/loraUpGroup: groups hold 2 modules, got 3/);
      await expect(loraUpGroup(ctx, { n: 1, modules: [u, { ...u, scale: NaN }] })).rejects.toThrow(/modules\[1\]\.scale/);
      b.destroy();
    });
  }
});

// Decode's fused form: the group normalises x itself (rmsnorm(x) * w) before the down projections, and can
// store the normalised rows for the gate/up linear that reads them next.
describe('grouped LoRA down with an RMSNorm prologue', async () => {
  const eps = 1e-6;
  const maxStorage = (await gpuFor('packed')).caps.limits.maxStorageBuffersPerShaderStage;
  // The last: rows whose sum of squares overflows f32 (up to ~2.4e38) around an ordinary one. Three modules
  // storing xn (decode's q/k/v group: 9 storage bindings) where the device grants them.
  const normCases = [[1, true, null, 3], [2, true, null, 1], [3, false, null, 8], [2, true, [1e22, 1, 3e37], 3], [3, true, null, 2]] as const;
  for (const subgroups of [true, false]) for (const [k, storeXn, rowScale, n] of normCases) {
    it.skipIf(loraDownGroupStorage(k, { xn: storeXn }) > maxStorage)(`${subgroups ? 'subgroups: ' : ''}${k} module(s)${storeXn ? ' storing xn' : ''}, ${n} row(s)${rowScale ? ', rows near f32\'s limit' : ''}: t = rmsnorm(x) * w · A^T in float64`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(40 + k);
      const inDim = 300;
      const ranks = [4, 8, 3].slice(0, k);
      const x = rng.fill(n * inDim, 2);
      if (rowScale) x.forEach((v, i) => (x[i] = v * rowScale[Math.floor(i / inDim)]));
      const w = Float32Array.from(rng.fill(inDim), (v) => 1 + 0.3 * v);
      const As = ranks.map((r) => rng.fill(r * inDim));
      const xb = f32Buffer(ctx, 'x', x);
      const wb = f32Buffer(ctx, 'normW', w);
      const xn = storeXn ? emptyF32(ctx, 'xn', n * inDim) : undefined;
      const mods = ranks.map((r, i) => ({ A: f32Buffer(ctx, `A${i}`, As[i]), t: emptyF32(ctx, `t${i}`, n * r), rank: r }));
      submitDispatches(ctx, [await loraDownGroup(ctx, { x: xb, n, inDim, norm: { w: wb, eps, xn }, modules: mods, subgroups })]);
      // float64: xn = x / sqrt(mean(x^2) + eps) * w, t = xn · A^T.
      const wantXn = new Float64Array(n * inDim);
      for (let row = 0; row < n; row++) {
        let ss = 0;
        for (let i = 0; i < inDim; i++) ss += x[row * inDim + i] ** 2;
        const rstd = 1 / Math.sqrt(ss / inDim + eps);
        for (let i = 0; i < inDim; i++) wantXn[row * inDim + i] = x[row * inDim + i] * rstd * w[i];
      }
      for (const [i, r] of ranks.entries()) {
        const want = new Float64Array(n * r);
        for (let row = 0; row < n; row++) for (let j = 0; j < r; j++) {
          let acc = 0;
          for (let c = 0; c < inDim; c++) acc += wantXn[row * inDim + c] * As[i][j * inDim + c];
          want[row * r + j] = acc;
        }
        expect(relMaxErr(await readF32(ctx, mods[i].t, n * r), want), `module ${i}`).toBeLessThan(1e-5);
      }
      if (xn) expect(relMaxErr(await readF32(ctx, xn, n * inDim), wantXn)).toBeLessThan(1e-5);
      for (const b of [xb, wb, ...(xn ? [xn] : []), ...mods.flatMap((m) => [m.A, m.t])]) b.destroy();
    });
  }

  it('names what is wrong: more bindings than the device grants, a short norm weight, xn aliasing x', async () => {
    const ctx = await gpuFor('packed');
    // Same device, WebGPU's default 8 storage bindings: three modules with a norm and xn need 9.
    const narrow = { ...ctx, caps: { ...ctx.caps, limits: { ...ctx.caps.limits, maxStorageBuffersPerShaderStage: 8 } } };
    const x = emptyF32(ctx, 'x', 64);
    const w = emptyF32(ctx, 'shortW', 8);
    const m = () => ({ A: emptyF32(ctx, 'A', 64), t: emptyF32(ctx, 't', 4), rank: 2 });
    await expect(loraDownGroup(narrow, { x, n: 2, inDim: 32, norm: { w: emptyF32(ctx, 'w', 32), eps: 1e-6, xn: emptyF32(ctx, 'xn', 64) }, modules: [m(), m(), m()] })).rejects.toThrow(/3 modules with a norm and xn need 9 storage buffers, the device allows 8/);
    await expect(loraDownGroup(ctx, { x, n: 2, inDim: 32, norm: { w: emptyF32(ctx, 'w', 32), eps: 1e-6 }, modules: [m(), m(), m(), m()] })).rejects.toThrow(/1 to 3 modules with a norm, got 4/);
    await expect(loraDownGroup(ctx, { x, n: 2, inDim: 32, norm: { w, eps: 1e-6 }, modules: [m()] })).rejects.toThrow(/norm.w \('shortW'\)/);
    await expect(loraDownGroup(ctx, { x, n: 2, inDim: 32, norm: { w: emptyF32(ctx, 'w', 32), eps: 1e-6, xn: x }, modules: [m()] })).rejects.toThrow(/xn must not be x/);
    await expect(loraDownGroup(ctx, { x, n: 2, inDim: 32, modules: [m()] })).rejects.toThrow(/2 to 3 modules, got 1/);
  });
});
