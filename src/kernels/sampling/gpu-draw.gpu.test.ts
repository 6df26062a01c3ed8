import { describe, expect, it } from 'vitest';
import { readBuffer } from '../../gpu/buffers';
import { encodeDispatch } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, u32Buffer } from '../common/testing';
import { logSumExp, sortRow, type SamplingOptions } from './draw';
import { DRAW_LOG_WORDS, gpuDrawServes, parseDrawLog } from './sampling';
import { GpuSampler } from '../../engine/gpu-sampler';
import { DRAW_EPS } from './gpu-draw.wgsl';
import { pureTemperatureDrawRef, samplingDistributionRef } from './sampling.ref';

// The GPU draw must give exactly the CPU rule's token (sampleWithU) whenever it claims to know it, and
// say "undecided" only rarely (near a boundary, or a top-p nucleus wider than the candidates).
describe('GPU draw (token chosen on the GPU, no read-back before the next step)', () => {
  const configs: SamplingOptions[] = [
    { temperature: 0 },
    { temperature: 0.7, topK: 20, topP: 0.9 },
    { temperature: 1.3, topK: 0, topP: 0.8 },
    { temperature: 1, topK: 5 },
    { temperature: 1 },
    { temperature: 2.5 },
    { temperature: 3, topP: 0.95 },
  ];
  for (const V of [50, 2500]) {
    for (const o of configs) {
      it(`V=${V} T=${o.temperature} topK=${o.topK ?? 0} topP=${o.topP ?? 1}: the GPU's token is the CPU rule's, for 40 uniforms`, async () => {
        const ctx = await gpuFor('packed');
        const rng = new Rng(V + 17);
        // Peaked logits (a few dozen likely tokens, like an LM) with a tie across 1024-slices.
        const logits = rng.fill(V, 1);
        for (let i = 0; i < Math.min(30, V / 2); i++) logits[rng.int(V)] += 6;
        logits[3] = logits[V - 2] = 12;
        const buf = f32Buffer(ctx, 'logits', logits);
        const s = await GpuSampler.create(ctx, { logits: buf, vocab: V });
        const ids = u32Buffer(ctx, 'ids', [0]);
        const entries = 40;
        const log = u32Buffer(ctx, 'draw-log', new Uint32Array(entries * DRAW_LOG_WORDS));
        expect(gpuDrawServes(o, V)).toBe(true);
        const ds = await s.drawDispatches(o, { ids, log });
        const us = Array.from({ length: entries }, () => rng.next());
        // One submission per draw, each after its own setDraw: the queue orders the writes between them.
        for (let i = 0; i < entries; i++) {
          s.setDraw(us[i], i);
          const enc = ctx.device.createCommandEncoder();
          for (const d of ds) encodeDispatch(ctx, enc, d);
          ctx.device.queue.submit([enc.finish()]);
        }
        const words = await readBuffer(ctx, log);
        const lastId = new Uint32Array(await readBuffer(ctx, ids))[0];
        const want = samplingDistributionRef(logits, o.temperature || 1, o.topK, o.topP);
        const lse1 = logSumExp(logits);
        let undecided = 0;
        for (let i = 0; i < entries; i++) {
          const e = parseDrawLog(words, i);
          const cpu = await s.sampleWithU(o, us[i]);
          if (e.undecided) {
            undecided++;
            continue;
          }
          expect(e.token, `draw ${i} (u=${us[i]})`).toBe(cpu.token);
          expect(e.logit).toBe(logits[e.token]);
          expect(Math.abs(e.lse1 - lse1)).toBeLessThan(1e-4);
          if (o.temperature) expect(want[e.token]).toBeGreaterThan(0);
          else expect(e.token).toBe(sortRow(logits).ids[0]);
        }
        expect(new Uint32Array(words, (entries - 1) * DRAW_LOG_WORDS * 4, 1)[0]).toBe(lastId);
        // Undecided only within rounding of a boundary (rare), and for a nucleus wider than the 64 candidates
        // (always); pure temperature past the candidates' mass is decided by the GPU's tail draw.
        const sorted = sortRow(logits);
        const probs = Array.from(sorted.ids, (id) => want[id]);
        const nucleus = probs.filter((p) => p > 0).length;
        const expected = o.temperature && !o.topK && V > 64 && (o.topP ?? 1) < 1 && nucleus > 64 ? entries : 0;
        expect(Math.abs(undecided - expected)).toBeLessThanOrEqual(1);

        s.destroy();
        for (const b of [buf, ids, log]) b.destroy();
      });
    }
  }

  it('pure temperature: u past the candidates\' mass is decided by the tail draw, u inside it by the candidates, and setDraw checks u', async () => {
    const ctx = await gpuFor('packed');
    const V = 3000;
    // Nearly flat logits: the top 64 hold about 2% of the mass.
    const logits = new Rng(5).fill(V, 0.01);
    const buf = f32Buffer(ctx, 'logits', logits);
    const s = await GpuSampler.create(ctx, { logits: buf, vocab: V });
    const ids = u32Buffer(ctx, 'ids', [0]);
    const log = u32Buffer(ctx, 'draw-log', new Uint32Array(2 * DRAW_LOG_WORDS));
    const ds = await s.drawDispatches({ temperature: 1 }, { ids, log });
    // u in the middle of the second candidate's interval, far from both its ends.
    const sorted = sortRow(logits);
    const lse = logSumExp(logits);
    const p0 = Math.exp(sorted.values[0] - lse);
    const p1 = Math.exp(sorted.values[1] - lse);
    const uIn = p0 + p1 / 2;
    for (const [i, u] of [0.5, uIn].entries()) {
      s.setDraw(u, i);
      const enc = ctx.device.createCommandEncoder();
      for (const d of ds) encodeDispatch(ctx, enc, d);
      ctx.device.queue.submit([enc.finish()]);
    }
    const words = await readBuffer(ctx, log);
    const past = parseDrawLog(words, 0);
    expect(past.undecided).toBe(false);
    expect(sorted.ids.subarray(0, 64)).not.toContain(past.token);
    expect(past.token).toBe(pureTemperatureDrawRef(logits, 1, 0.5));
    expect(past.logit).toBe(logits[past.token]);
    expect((await s.sampleWithU({ temperature: 1 }, 0.5)).token).toBe(past.token);
    const inside = parseDrawLog(words, 1);
    expect(inside.undecided).toBe(false);
    expect(inside.token).toBe(sorted.ids[1]);
    expect((await s.sampleWithU({ temperature: 1 }, uIn)).token).toBe(sorted.ids[1]);
    expect(() => s.setDraw(1, 0)).toThrow(/u must be in \[0, 1\)/);
    expect(gpuDrawServes({ temperature: 1, topK: 100 }, V)).toBe(false);
    await expect(s.drawDispatches({ temperature: 1, topK: 100 }, { ids, log })).rejects.toThrow(/topK <= 64/);
    s.destroy();
    for (const b of [buf, ids, log]) b.destroy();
  });
});

// Many seeded draws from flat rows (random-weight models: almost every u lies past the top 64's mass), all
// rows of a batch at once: each GPU token is the CPU rule's (sampleWithU, float64) and the independent
// reference's, and the GPU leaves undecided only draws within rounding of a boundary.
describe('GPU tail draw on flat rows (pure temperature decided on the GPU)', async () => {
  for (const path of await weightPaths()) {
    for (const [T, scale] of [[1, 0.5], [0.7, 2]] as const) {
      it(`${path}: T=${T}, logits N(0, ${scale}): 8 rows x 12 steps agree with the CPU rule, undecided only near a candidate's interval end`, async () => {
        const ctx = await gpuFor(path);
        const V = 2600;
        const rows = 8;
        const steps = 12;
        const rng = new Rng(100 + T * 10 + scale);
        const logits = rng.fill(rows * V, scale);
        // Row 3: a tie across the 64th place (the lower id is a candidate); row 5: tokens that are never drawn.
        const row3 = sortRow(logits.subarray(3 * V, 4 * V));
        logits[3 * V + V - 1] = logits[3 * V + row3.ids[63]];
        for (let i = 0; i < 300; i++) logits[5 * V + rng.int(V)] = -Infinity;
        const buf = f32Buffer(ctx, 'logits', logits);
        const s = await GpuSampler.create(ctx, { logits: buf, vocab: V, rows });
        const ids = u32Buffer(ctx, 'ids', new Uint32Array(rows));
        const log = u32Buffer(ctx, 'draw-log', new Uint32Array(steps * rows * DRAW_LOG_WORDS));
        const o = { temperature: T };
        const { dispatches } = await s.drawPlan(o, { ids, log }, rows);
        const us = Array.from({ length: steps * rows }, () => rng.next());
        for (let t = 0; t < steps; t++) {
          s.setDraws(Array.from({ length: rows }, (_, r) => ({ u: us[t * rows + r], index: t * rows + r })));
          const enc = ctx.device.createCommandEncoder();
          for (const d of dispatches) encodeDispatch(ctx, enc, d);
          ctx.device.queue.submit([enc.finish()]);
        }
        const words = await readBuffer(ctx, log);
        let undecided = 0;
        let tail = 0;
        // Draws whose u lies within rounding (twice DRAW_EPS) of a candidate's interval end: the only ones
        // the GPU may leave undecided, besides a tail attempt within a few ulps of its acceptance bound.
        let nearEnd = 0;
        for (let r = 0; r < rows; r++) {
          const row = logits.slice(r * V, (r + 1) * V);
          const sorted = sortRow(row);
          const top = new Set(sorted.ids.subarray(0, 64));
          const lse = logSumExp(row, 1 / T);
          const ends = [0];
          for (let i = 0; i < 64; i++) ends.push(ends[i] + Math.exp(sorted.values[i] / T - lse));
          for (let t = 0; t < steps; t++) if (ends.some((b) => Math.abs(us[t * rows + r] - b) < 2 * DRAW_EPS)) nearEnd++;
          const one = f32Buffer(ctx, `row${r}`, row);
          const alone = await GpuSampler.create(ctx, { logits: one, vocab: V });
          for (let t = 0; t < steps; t++) {
            const u = us[t * rows + r];
            const e = parseDrawLog(words, t * rows + r);
            if (e.undecided) {
              undecided++;
              continue;
            }
            if (!top.has(e.token)) tail++;
            expect(e.token, `row ${r} step ${t} u=${u}`).toBe((await alone.sampleWithU(o, u)).token);
            expect(e.token, `row ${r} step ${t} u=${u} (reference)`).toBe(pureTemperatureDrawRef(row, T, u));
            expect(e.logit).toBe(row[e.token]);
          }
          alone.destroy();
          one.destroy();
        }
        expect(undecided).toBeLessThanOrEqual(nearEnd + 1);
        expect(tail).toBeGreaterThan((rows * steps) / 10);
        s.destroy();
        for (const b of [buf, ids, log]) b.destroy();
      });
    }
  }
});
