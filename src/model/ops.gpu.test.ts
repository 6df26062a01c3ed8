// The engine's ops pick the f16 or the 4-bit kernel from the weight's kind: forward linear, the frozen
// linear's input gradient (linearBackward) and the LM-head chunk backward, each against a float64 CPU
// product over the values the GPU holds (f16-rounded, or 4-bit dequantized), including a row window
// (rowBase) of a fused 4-bit matrix. Runs in Node/Dawn and in Chromium.
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { readF32, uploadStorage, createStorage } from '../gpu/buffers';
import { submitDispatches } from '../gpu/pipelines';
import { dequantizeQ4, quantizeQ4, uploadQ4 } from '../kernels/q4';
import { f16BitsToF32, toF16Array } from '../util/half';
import { Rng } from '../util/rng';
import * as ops from './ops';
import type { MatrixWeight } from './weights';

const rows = 40; // fused matrix rows; the tested linear is rows [8, 8 + OUT)
const OUT = 24;
const IN = 64;
const N = 5;

describe('engine ops dispatch on the weight kind', () => {
  for (const kind of ['f16', 'q4'] as const) {
    it(`${kind}: linear, linearBackward and lmHeadBackward on a row window`, async () => {
      const ctx = await gpuFor('packed');
      const rng = new Rng(kind === 'f16' ? 1 : 2);
      const Wf = rng.fill(rows * IN, 0.2);
      let W: MatrixWeight;
      let Wv: Float64Array; // the values of rows [8, 8 + OUT) the GPU computes with
      if (kind === 'q4') {
        const m = quantizeQ4(Wf, rows, IN);
        W = { ...uploadQ4(ctx, 'W', m), rowBase: 8 };
        Wv = dequantizeQ4(m, 8, OUT);
      } else {
        // f16 has no rowBase: the window is a separate buffer, as the f16 upload makes it.
        const bits = toF16Array(Wf).slice(8 * IN, (8 + OUT) * IN);
        W = uploadStorage(ctx, 'W', bits);
        Wv = Float64Array.from(bits, (b) => f16BitsToF32(b));
      }
      const x = Float32Array.from(rng.fill(N * IN, 1));
      const dy = Float32Array.from(rng.fill(N * OUT, 1));
      const xb = uploadStorage(ctx, 'x', x);
      const yb = createStorage(ctx, 'y', N * OUT * 4);
      const dyb = uploadStorage(ctx, 'dy', dy);
      const dxb = createStorage(ctx, 'dx', N * IN * 4);
      // logits laid out [N, 3 + OUT]: the chunk's columns start at rowOffset 3 (a vocabulary window).
      const ld = 3 + OUT;
      const dl = new Float32Array(N * ld);
      for (let r = 0; r < N; r++) dl.set(dy.subarray(r * OUT, (r + 1) * OUT), r * ld + 3);
      const dlb = uploadStorage(ctx, 'dlogits', dl);
      const dhb = createStorage(ctx, 'dh', N * IN * 4);
      const chunk = { weight: W, rowOffset: 3, rowCount: OUT };
      submitDispatches(ctx, [
        await ops.linear(ctx, { x: xb, W, y: yb, n: N, inDim: IN, outDim: OUT }),
        ...(await ops.linearBackward(ctx, W, { dy: dyb, dx: dxb, n: N, inDim: IN, outDim: OUT })),
        ...(await ops.lmHeadBackward(ctx, chunk, { dlogits: dlb, dx: dhb, rows: N, hidden: IN, ld, accumulate: false })),
      ]);
      const wantY = new Float64Array(N * OUT);
      const wantDx = new Float64Array(N * IN);
      for (let r = 0; r < N; r++) {
        for (let o = 0; o < OUT; o++) {
          for (let i = 0; i < IN; i++) {
            wantY[r * OUT + o] += x[r * IN + i] * Wv[o * IN + i];
            wantDx[r * IN + i] += dy[r * OUT + o] * Wv[o * IN + i];
          }
        }
      }
      expect(maxAbsDiff(await readF32(ctx, yb), wantY)).toBeLessThan(1e-4);
      expect(maxAbsDiff(await readF32(ctx, dxb), wantDx)).toBeLessThan(1e-4);
      expect(maxAbsDiff(await readF32(ctx, dhb), wantDx)).toBeLessThan(1e-4);
      for (const b of [xb, yb, dyb, dxb, dlb, dhb]) b.destroy();
    });
  }
});
