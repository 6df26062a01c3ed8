import { describe, expect, it } from 'vitest';
import { requestGpu } from '../../gpu/device';
import { readBuffer } from '../../gpu/buffers';
import { fromF16Array, roundToF16 } from '../../util/half';
import { Rng } from '../../util/rng';
import { dequantizeQ4, quantizeQ4 } from './q4.ref';
import { q4DequantF16 } from './q4dequant';
import { destroyQ4, uploadQ4 } from './q4weight';

describe('q4DequantF16: the f16 copy of a 4-bit matrix', async () => {
  const ctx = await requestGpu();
  for (const scale of ['f16', 'f32'] as const) {
    it.skipIf(!ctx.caps.f16)(`equals float64 deq(W) rounded to f16, every value (${scale} scales)`, async () => {
      const [rows, inDim] = [37, 96];
      const q = quantizeQ4(new Rng(3).fill(rows * inDim, 0.7), rows, inDim, scale);
      const W = uploadQ4(ctx, 'W', q);
      const out = await q4DequantF16(ctx, 'W.f16', W, rows, inDim);
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

  it('names the matrix when its buffers are too small', async () => {
    const q = quantizeQ4(new Rng(4).fill(4 * 32, 1), 4, 32, 'f16');
    const W = uploadQ4(ctx, 'small', q);
    await expect(q4DequantF16(ctx, 'small.f16', W, 8, 32)).rejects.toThrow(/q4DequantF16: q_weight \('small.q_weight'/);
    destroyQ4(W);
  });
});
