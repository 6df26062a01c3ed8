import { describe, expect, it } from 'vitest';
import { readBuffer } from '../../gpu/buffers';
import { encodeDispatch } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor } from '../../../tests/support/gpu';
import { f32Buffer, u32Buffer } from '../common/testing';
import { logSumExp, sortRow, type SamplingOptions } from './draw';
import { DRAW_LOG_WORDS, GpuSampler, gpuDrawServes, parseDrawLog } from './sampling';
import { samplingDistributionRef } from './sampling.ref';

// The GPU draw must give exactly the CPU rule's token (sampleWithU) whenever it claims to know it, and
// say "undecided" only rarely (near a boundary, or past the candidates' mass for pure temperature).
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
        // Undecided past the candidates, else only within rounding of a boundary (rare): a nucleus wider than
        // the 64 candidates is always undecided; pure temperature is undecided where u is past their mass.
        const sorted = sortRow(logits);
        const probs = Array.from(sorted.ids, (id) => want[id]);
        const top64 = probs.slice(0, 64).reduce((a, b) => a + b, 0);
        const nucleus = probs.filter((p) => p > 0).length;
        let expected = 0;
        if (o.temperature && !o.topK && V > 64) {
          if ((o.topP ?? 1) < 1) expected = nucleus > 64 ? entries : 0;
          else expected = us.filter((u) => u >= top64).length;
        }
        expect(Math.abs(undecided - expected)).toBeLessThanOrEqual(1);
        s.destroy();
        for (const b of [buf, ids, log]) b.destroy();
      });
    }
  }

  it('pure temperature: u past the candidates\' mass is undecided, u inside it is decided, and setDraw checks u', async () => {
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
    expect(parseDrawLog(words, 0).undecided).toBe(true);
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
