import { describe, expect, it } from 'vitest';
import { createStorage, readBuffer } from '../../gpu/buffers';
import { encodeDispatch } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, u32Buffer } from '../common/testing';
import { logSumExp, sortRow, type SamplingOptions } from './draw';
import { DRAW_LOG_WORDS, parseDrawLog, topkPass } from './sampling';
import { GpuSampler } from '../../engine/gpu-sampler';
import { TOPK_NONE, TOPK_ROUNDS_MAX_K } from './sampling.wgsl';

// Several rows at once: what a batched decode step samples from (one row per sequence).
describe('sampling over several rows (one set of dispatches for a decode step\'s sequences)', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    // k at and around the switch from arg-max rounds to the bitonic sort, and the largest k.
    for (const k of [1, TOPK_ROUNDS_MAX_K, TOPK_ROUNDS_MAX_K + 1, 64]) {
      it(`${path}: top-${k} of 3 rows at a padded stride = each row's float64 sort (ties to the lower id, NaN last)`, async () => {
        const ctx = await gpuFor(path);
        const rows = 3;
        const count = 2100; // three 1024-slices, the last one short
        const ld = 2200;
        const rng = new Rng(k);
        const data = rng.fill(rows * ld, 3);
        // Padding past count must never be read: make it win if it were.
        for (let r = 0; r < rows; r++) for (let c = count; c < ld; c++) data[r * ld + c] = 1e9;
        // Ties across slices (the lower id first) and a NaN (ranks last) in row 1.
        data[ld + 5] = data[ld + 2050] = 40;
        data[ld + 7] = NaN;
        // Row 2: fewer distinct large values than k is not possible here, so a constant row tests ties only.
        for (let c = 0; c < count; c++) data[2 * ld + c] = 0.5;
        const vals = f32Buffer(ctx, 'values', data);
        const slices = Math.ceil(count / 1024);
        const outV = createStorage(ctx, 'out.values', rows * slices * k * 4);
        const outI = createStorage(ctx, 'out.ids', rows * slices * k * 4);
        const outV2 = createStorage(ctx, 'out2.values', rows * k * 4);
        const outI2 = createStorage(ctx, 'out2.ids', rows * k * 4);
        const first = await topkPass(ctx, { values: vals, outValues: outV, outIds: outI, count, k, rows, ld });
        const second = await topkPass(ctx, { values: outV, ids: outI, outValues: outV2, outIds: outI2, count: slices * k, k, rows });
        const enc = ctx.device.createCommandEncoder();
        encodeDispatch(ctx, enc, first);
        encodeDispatch(ctx, enc, second);
        ctx.device.queue.submit([enc.finish()]);
        const gotV = new Float32Array(await readBuffer(ctx, outV2));
        const gotI = new Uint32Array(await readBuffer(ctx, outI2));
        for (let r = 0; r < rows; r++) {
          const row = Float32Array.from(data.subarray(r * ld, r * ld + count), (v) => (Number.isNaN(v) ? -3e38 : v));
          const want = sortRow(row);
          expect(Array.from(gotI.subarray(r * k, (r + 1) * k)), `row ${r} ids`).toEqual(Array.from(want.ids.subarray(0, k)));
          expect(Array.from(gotV.subarray(r * k, (r + 1) * k)), `row ${r} values`).toEqual(Array.from(want.values.subarray(0, k)));
        }
        // The tie in row 1: id 5 before id 2050.
        if (k >= 2) expect(Array.from(gotI.subarray(k, k + 2))).toEqual([5, 2050]);
        for (const b of [vals, outV, outI, outV2, outI2]) b.destroy();
      });
    }

    it(`${path}: a slice shorter than k leaves empty slots (id NONE) after its values, both variants`, async () => {
      const ctx = await gpuFor(path);
      for (const k of [TOPK_ROUNDS_MAX_K, 64]) {
        const count = 3;
        const vals = f32Buffer(ctx, 'values', [1, 3, 2, 9, 8, 7]);
        const outV = createStorage(ctx, 'out.values', 2 * k * 4);
        const outI = createStorage(ctx, 'out.ids', 2 * k * 4);
        const enc = ctx.device.createCommandEncoder();
        encodeDispatch(ctx, enc, await topkPass(ctx, { values: vals, outValues: outV, outIds: outI, count, k, rows: 2 }));
        ctx.device.queue.submit([enc.finish()]);
        const ids = new Uint32Array(await readBuffer(ctx, outI));
        expect(Array.from(ids.subarray(0, 4))).toEqual([1, 2, 0, TOPK_NONE]);
        expect(Array.from(ids.subarray(k, k + 4))).toEqual([0, 1, 2, TOPK_NONE]);
        for (const b of [vals, outV, outI]) b.destroy();
      }
      const vals = f32Buffer(ctx, 'values', [1]);
      await expect(topkPass(ctx, { values: vals, outValues: vals, outIds: vals, count: 10, k: 1, ld: 5 })).rejects.toThrow(/ld 5 is below count 10/);
      vals.destroy();
    });
  }

  it('GPU draws for 5 rows with two sets of options in one step: each row gets the token its own one-row draw gives', async () => {
    const ctx = await gpuFor('packed');
    const V = 3000;
    const rows = 5;
    const rng = new Rng(11);
    const logits = rng.fill(rows * V, 1);
    for (let r = 0; r < rows; r++) for (let i = 0; i < 30; i++) logits[r * V + rng.int(V)] += 6;
    const buf = f32Buffer(ctx, 'logits', logits);
    const s = await GpuSampler.create(ctx, { logits: buf, vocab: V, rows });
    // Rows 0, 2, 3 sample at T = 0.8 with top-p; rows 1 and 4 greedily.
    const sampling: SamplingOptions = { temperature: 0.8, topP: 0.9 };
    const greedy: SamplingOptions = { temperature: 0 };
    const optionsOf = (r: number) => (r === 1 || r === 4 ? greedy : sampling);
    const ids = u32Buffer(ctx, 'ids', new Uint32Array(rows));
    const steps = 6;
    const log = u32Buffer(ctx, 'draw-log', new Uint32Array(steps * rows * DRAW_LOG_WORDS));
    const a = await s.drawPlan(sampling, { ids, log }, rows);
    const b = await s.drawPlan(greedy, { ids, log }, rows);
    expect(a.plan).not.toBe(b.plan);
    const us = Array.from({ length: steps * rows }, () => rng.next());
    for (let t = 0; t < steps; t++) {
      s.setDraws(Array.from({ length: rows }, (_, r) => ({ u: us[t * rows + r], index: t * rows + r, plan: optionsOf(r) === greedy ? b.plan : a.plan })));
      const enc = ctx.device.createCommandEncoder();
      for (const d of [...a.dispatches, ...b.dispatches]) encodeDispatch(ctx, enc, d);
      ctx.device.queue.submit([enc.finish()]);
    }
    const words = await readBuffer(ctx, log);
    const last = new Uint32Array(await readBuffer(ctx, ids));
    // Each row against a one-row sampler over a copy of that row alone (the CPU rule, float64).
    let decided = 0;
    for (let r = 0; r < rows; r++) {
      const row = logits.slice(r * V, (r + 1) * V);
      const one = f32Buffer(ctx, `row${r}`, row);
      const alone = await GpuSampler.create(ctx, { logits: one, vocab: V });
      for (let t = 0; t < steps; t++) {
        const e = parseDrawLog(words, t * rows + r);
        expect(Math.abs(e.lse1 - logSumExp(row))).toBeLessThan(1e-4);
        if (e.undecided) continue;
        decided++;
        const cpu = await alone.sampleWithU(optionsOf(r), us[t * rows + r]);
        expect(e.token, `row ${r} step ${t}`).toBe(cpu.token);
        expect(e.logit).toBe(row[e.token]);
      }
      // The ids buffer holds each row's last token at its row: the next decode step's input.
      expect(last[r]).toBe(parseDrawLog(words, (steps - 1) * rows + r).token);
      alone.destroy();
      one.destroy();
    }
    expect(decided).toBeGreaterThan(steps * rows - 3);
    // Greedy rows draw their argmax whatever u is.
    expect(parseDrawLog(words, 1).token).toBe(sortRow(logits.slice(V, 2 * V)).ids[0]);
    expect(() => s.setDraws(Array.from({ length: rows + 1 }, () => ({ u: 0, index: 0 })))).toThrow(/6 rows, the sampler takes 5/);
    await expect(s.drawPlan(sampling, { ids, log }, rows + 1)).rejects.toThrow(/rows must be an integer in \[1, 5\]/);
    await expect(GpuSampler.create(ctx, { logits: buf, vocab: V, rows: 6 })).rejects.toThrow(/holds fewer than rows 6 x vocab 3000/);
    s.destroy();
    for (const x of [buf, ids, log]) x.destroy();
  });
});
