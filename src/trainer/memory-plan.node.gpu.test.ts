// The memory plan in training-memory.ts is what the GPU actually allocates: per-row growth of a training pass
// (engine `keep` activations + trainer scratch) matches trainingBytesPerRow, and the documented
// Qwen2.5-0.5B figures follow from it.
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import type { Qwen2Config } from '../io/qwen2-config';
import { Qwen2Runtime } from '../engine/runtime';
import { Rng } from '../util/rng';
import { LoraBackwardPass, createLoraGrads } from '../model/backward';
import { initLoraAdapter } from './lora-init';
import { ToyTask, toyModel } from './toy-task';
import { trainingBytesPerRow } from '../model/training-memory';

describe('training memory plan', () => {
  it('per-row bytes of a training pass match trainingBytesPerRow (toy model on the GPU)', async () => {
    const model = toyModel(new ToyTask());
    const rt = await Qwen2Runtime.create(await gpuFor('native'), model.config, model.source, { maxContext: 16 });
    const gpuAdapter = await rt.addAdapter('m', initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(1)));
    const grads = await createLoraGrads(rt.ctx, gpuAdapter);
    const bytes = async (rows: number) => {
      const p = await LoraBackwardPass.create(rt.ctx, rt.weights, gpuAdapter, grads, rows, 8);
      const b = p.bytes;
      p.destroy();
      return b;
    };
    const growth = ((await bytes(264)) - (await bytes(64))) / 200;
    const { kept, scratch } = trainingBytesPerRow(model.config, 4);
    console.info(`[memory] toy model: ${growth} B/row allocated, plan says ${kept + scratch}`);
    expect(Math.abs(growth - (kept + scratch)) / (kept + scratch)).toBeLessThan(0.05);
    rt.destroy();
  });

  it('Qwen2.5-0.5B, r = 16: 8 turns × 600 tokens fit in about 3 GB with 768-row micro-batches', () => {
    const c = { hiddenSize: 896, intermediateSize: 4864, numHeads: 14, numKvHeads: 2, headDim: 64, numLayers: 24, vocabSize: 151936 } as Qwen2Config;
    const { kept, scratch } = trainingBytesPerRow(c, 16);
    expect(kept / 24).toBeCloseTo(81_408, -2);
    const weights = 494e6 * 2;
    const loraParams = 24 * 16 * (2 * (896 + 896) + 2 * (896 + 128) + 3 * (896 + 4864));
    expect(loraParams).toBe(8_798_208);
    const total = 768 * (kept + scratch) + weights + 5 * 4 * loraParams + 32 * c.vocabSize * 4;
    console.info(`[memory] Qwen2.5-0.5B r16: ${(kept / 2 ** 20).toFixed(2)} MiB kept/row, 768-row pass total ${(total / 1e9).toFixed(2)} GB; all 4800 rows at once would need ${((4800 * (kept + scratch)) / 1e9).toFixed(1)} GB`);
    expect(total).toBeLessThan(3e9);
    expect(Math.ceil(4800 / 768)).toBe(7);
  });
});
