import { describe, expect, it } from 'vitest';
import { requestGpu } from '../../gpu/device';
import { readBuffer } from '../../gpu/buffers';
import { fromF16Array, roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { dequantizeQ4, quantizeQ4 } from './q4.ref';
import { q4DequantF16 } from './q4dequant';
import { createStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { destroyQ4, uploadQ4 } from './q4weight';

describe('q4DequantF16: the f16 copy of a 4-bit matrix', async () => {
  const ctx = await requestGpu();
  for (const scale of ['f16', 'f32'] as const) {
    it.skipIf(!ctx.caps.f16)(`equals float64 deq(W) rounded to f16, every value (${scale} scales)`, async () => {
      const [rows, inDim] = [37, 96];
      const q = quantizeQ4(new Rng(3).fill(rows * inDim, 0.7), rows, inDim, scale);
      const W = uploadQ4(ctx, 'W', q);
      const out = createStorage(ctx, 'W.f16', rows * inDim * 2);
      submitDispatches(ctx, [await q4DequantF16(ctx, W, rows, inDim, out)]);
      const got = fromF16Array(new Uint16Array(await readBuffer(ctx, out, rows * inDim * 2)));
      const want = roundToF16(dequantizeQ4(q));
      let diff = 0;
      for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) diff++;
      expect(diff).toBe(0);
      expect(got.length).toBe(rows * inDim);
      destroyQ4(W);
      out.destroy();
    });
  }

  it('names the matrix or the output when a buffer is too small', async () => {
    const q = quantizeQ4(new Rng(4).fill(4 * 32, 1), 4, 32, 'f16');
    const W = uploadQ4(ctx, 'small', q);
    const out = createStorage(ctx, 'small.f16', 8 * 32 * 2);
    await expect(q4DequantF16(ctx, W, 8, 32, out)).rejects.toThrow(/q4DequantF16: q_weight \('small.q_weight'/);
    if (ctx.caps.f16) await expect(q4DequantF16(ctx, W, 4, 64 / 2, createStorage(ctx, 'tiny', 16))).rejects.toThrow(/q4DequantF16: out \('tiny', 16 B\) is smaller than \[4, 32\] f16/);
    destroyQ4(W);
    out.destroy();
  });
});
