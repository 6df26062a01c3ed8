// What the planner holds on the GPU for a long generation: Qwen2Runtime.reserve() allocates the buffers a
// generate() at full context holds, and memory() must then agree with the buffers the device really
// created (counted by wrapping createBuffer), and stay under the 600 MB target for a Qwen2.5-0.5B
// q4f16_1 planner with a 4096-token KV cache and a rank-16 adapter on all seven targets.
import { afterEach, describe, expect, it } from 'vitest';
import { BufferTracker } from '../../bench/buffer-tracker';
import { QWEN25_05B, shapedQ4Weights } from '../../bench/shaped-model';
import { gpuFor } from '../../tests/support/gpu';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource } from '../../tests/support/random-qwen2';
import { initLoraAdapter } from '../trainer/lora-init';
import { Rng } from '../util/rng';
import { Qwen2Runtime, type GpuMemoryReport } from './runtime';
import { quantizeModel } from '../../tests/support/q4-model';

const total = (m: GpuMemoryReport) => m.weights + m.adapters + m.activations + m.kvCache;
const samplerBytes = (t: BufferTracker) => t.byLabel().find((e) => e.label === 'sampler')?.bytes ?? 0;

let tracker: BufferTracker | null = null;
afterEach(() => {
  tracker?.uninstall();
  tracker = null;
});

describe('Qwen2Runtime.reserve and memory()', () => {
  for (const kind of ['f16', 'q4'] as const) it(`${kind}: reserve() allocates what a full-context generate() allocates, and memory() counts every storage buffer but the samplers`, async () => {
    const ctx = await gpuFor('native');
    // Widths that are multiples of 32, as 4-bit weights need.
    const { config, weights } = randomQwen2(5, { numLayers: 2, vocabSize: 60, hiddenSize: 32, intermediateSize: 64, numHeads: 4, numKvHeads: 2, headDim: 8 });
    // 4-bit weights decode through the fused kernels, which add packed per-layer norm + bias buffers.
    const tensors = () => (kind === 'q4' ? quantizeModel(config, weights, 'f16').source : toWeightSource(config, weights));
    const adapter = toLoraAdapter(config, randomAdapter(6, config, 4));
    const open = async () => {
      // A context over 1024 positions, so decode takes split-K attention and its scratch is counted too.
      const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), tensors(), { maxContext: 1100, maxBatchRows: 16, logitsRows: 8 });
      await rt.addAdapter('a', adapter);
      rt.setActiveAdapter('a');
      return rt;
    };
    const prompt = randomTokens(new Rng(9), 60, config.vocabSize);

    tracker = BufferTracker.install(ctx.device);
    const reserved = await open();
    const report = await reserved.reserve();
    expect(reserved.batchRows).toBe(16);
    if (kind === 'q4') expect(tracker.byLabel().some((e) => e.label.startsWith('decode'))).toBe(true);
    // Every storage buffer the runtime made is in the report, except the samplers' small scratch.
    expect(tracker.now().storage - samplerBytes(tracker)).toBe(total(report));
    const heldAfterReserve = tracker.now().storage;
    // A generate over four prompt chunks and a few decode steps adds no storage buffer.
    const out = await reserved.generate(prompt, { maxNewTokens: 3, temperature: 0 });
    expect(out.tokens.length).toBeGreaterThan(0);
    expect(tracker.now().storage).toBe(heldAfterReserve);
    expect(reserved.memory()).toEqual(report);
    reserved.destroy();
    expect(tracker.now().storage).toBe(0);

    // The same generate on a runtime that reserved nothing ends up holding exactly what reserve() made.
    const plain = await open();
    await plain.generate(prompt, { maxNewTokens: 3, temperature: 0 });
    expect(plain.memory()).toEqual(report);
    expect(tracker.now().storage).toBe(heldAfterReserve);
    plain.destroy();
  });

  it('reserve() rejects a prompt length outside the context', async () => {
    const ctx = await gpuFor('native');
    const { config, weights } = randomQwen2(5, { numLayers: 1, vocabSize: 40 });
    const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), toWeightSource(config, weights), { maxContext: 32 });
    await expect(rt.reserve({ promptTokens: 33 })).rejects.toThrow(/promptTokens.*context limit 32/);
    await expect(rt.reserve({ promptTokens: 0 })).rejects.toThrow(/promptTokens/);
    rt.destroy();
  });

  it('Qwen2.5-0.5B q4f16_1 planner + rank-16 adapter + 4096-token KV cache holds under 600 MiB', async () => {
    const ctx = await gpuFor('native');
    tracker = BufferTracker.install(ctx.device);
    const c = QWEN25_05B;
    const rt = await Qwen2Runtime.create(ctx, c, shapedQ4Weights(c), { maxContext: 4096 });
    try {
      await rt.addAdapter('lora', initLoraAdapter(c, { r: 16, alpha: 32 }, new Rng(3)));
      rt.setActiveAdapter('lora');
      const m = await rt.reserve();
      const MiB = 2 ** 20;
      console.info(`[memory] 0.5B q4 + r16 + 4k KV: ${JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, +(v / MiB).toFixed(1)])))} MiB, total ${(total(m) / MiB).toFixed(1)} MiB`);

      // Independent figures: KV is f32 K and V for every layer and position, plus split decode attention's
      // scratch (up to 8 query rows, a decode step of 8 sequences, x 14 heads x 16 slices of 256 keys, each hd
      // outputs + max + sum, f32);
      // LoRA is f32 A and B per pair.
      expect(m.kvCache).toBe(2 * c.numLayers * 4096 * c.numKvHeads * c.headDim * 4 + 8 * c.numHeads * (4096 / 256) * (c.headDim + 2) * 4);
      const H = c.hiddenSize;
      const kvd = c.numKvHeads * c.headDim;
      const I = c.intermediateSize;
      expect(m.adapters).toBe(4 * 16 * c.numLayers * (2 * (H + H) + 2 * (H + kvd) + 3 * (H + I)));
      // The prefill plan is one chunk of the default maxBatchRows, as a 4096-token prompt runs in.
      expect(rt.batchRows).toBe(512);

      // The report is what the device holds: exactly the storage buffers minus the samplers, and within
      // 1% of every buffer there is (uniforms and samplers are small).
      const held = tracker.now();
      expect(held.storage - samplerBytes(tracker)).toBe(total(m));
      expect(Math.abs(held.all - total(m)) / total(m)).toBeLessThan(0.01);
      expect(total(m)).toBeLessThan(600 * MiB);
    } finally {
      rt.destroy();
    }
  });
});
