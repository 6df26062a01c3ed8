// The f16 copies of a 4-bit model's layer matrices that the tensor-core matmuls read (UploadOptions.f16Copies):
// one per stored matrix (q/k/v and gate/up windows share their fused matrix's), holding deq(W) rounded to f16
// bit for bit, counted in the weights' bytes and freed with them. On by default only where the device was made
// with subgroup matrices (never here), so they are asked for explicitly.
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { quantizeModel } from '../../tests/support/q4-model';
import { randomQwen2, toQwen2Config } from '../../tests/support/random-qwen2';
import { readBuffer } from '../gpu/buffers';
import { dequantizeQ4 } from '../kernels/q4/q4.ref';
import { fromF16Array, roundToF16 } from '../util/half';
import { isQ4, Qwen2Weights, type MatrixWeight } from './weights';
import type { Q4Weight } from '../kernels/q4/q4weight';

const q4 = (w: MatrixWeight): Q4Weight => {
  if (!isQ4(w)) throw new Error('expected a 4-bit matrix');
  return w;
};

describe('f16 copies of 4-bit layer matrices', async () => {
  const ctx = await gpuFor('native');
  it.skipIf(!ctx.caps.f16)('one per stored matrix, equal to deq(W) in f16, counted in the bytes of the weights', async () => {
    const { config, weights } = randomQwen2(41, { numHeads: 2, numKvHeads: 1, headDim: 16, intermediateSize: 64, vocabSize: 40, numLayers: 2, tie: true });
    const { source } = quantizeModel(config, weights, 'f16');
    const c = toQwen2Config(config);
    const plain = await Qwen2Weights.upload(ctx, c, source);
    const w = await Qwen2Weights.upload(ctx, c, source, { f16Copies: true });
    try {
      expect(q4(plain.layers[0].q).f16).toBeUndefined();
      const L = w.layers[1];
      expect(q4(L.q).f16).toBeDefined();
      expect(q4(L.k).f16).toBe(q4(L.q).f16);
      expect(q4(L.v).f16).toBe(q4(L.q).f16);
      expect(q4(L.up).f16).toBe(q4(L.gate).f16);
      expect(q4(w.embed[0].weight).f16).toBeUndefined();
      const H = c.hiddenSize;
      const qkvRows = (c.numHeads + 2 * c.numKvHeads) * c.headDim;
      const copyBytes = c.numLayers * 2 * (qkvRows * H + H * c.numHeads * c.headDim + 2 * c.intermediateSize * H + H * c.intermediateSize);
      expect(w.bytes - plain.bytes).toBe(copyBytes);
      expect(w.f16CopyBytes).toBe(copyBytes);
      expect(w.decodeBytes).toBe(plain.bytes);
      expect(plain.f16CopyBytes).toBe(0);
      // The down projection of layer 1, every value.
      const down = q4(L.down);
      const raw = source.raw('model.layers.1.mlp.down_proj.q_weight') as Uint32Array;
      const scales = source.raw('model.layers.1.mlp.down_proj.q_scale') as Uint16Array;
      const want = roundToF16(dequantizeQ4({ qWeight: raw, qScale: scales, scale: 'f16', out: H, inDim: c.intermediateSize }));
      const got = fromF16Array(new Uint16Array(await readBuffer(ctx, down.f16!, H * c.intermediateSize * 2)));
      expect(Array.from(got)).toEqual(Array.from(want));
    } finally {
      plain.destroy();
      w.destroy();
    }
  });
});
