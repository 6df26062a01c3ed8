// The GPU Flow-GRPO loss and LoRA gradients on the qwen2-tiny fixture against PyTorch (expected.json
// `flowgrpo`, flowgrpo_grads.safetensors), on both f16 weight paths, in one batch and in micro-batches.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff, relL2 } from '../../tests/support/compare';
import { TINY, readSafetensorsF32 } from '../../tests/support/qwen2-fixture';
import { loadAdapter, loadCheckpoint } from '../engine/load-checkpoint';
import { directorySource } from '../io/sources';
import { Qwen2Runtime } from '../engine/runtime';
import { GpuPolicyBackend } from './gpu-backend';
import { grpoLossAndGrads } from './grpo-grad';
import { fromFixtureSamples, type FixtureSample } from '../model/samples';

const f = JSON.parse(readFileSync(join(TINY, 'expected.json'), 'utf8')).flowgrpo as {
  samples: Array<FixtureSample & { ref_logprobs: number[]; cur_logprobs: number[] }>;
  eps_low: number;
  eps_high: number;
  beta: number;
  loss: number;
};
const want = readSafetensorsF32(join(TINY, 'flowgrpo_grads.safetensors'));

describe('GPU Flow-GRPO loss and LoRA gradients vs the PyTorch fixture', async () => {
  for (const path of await weightPaths()) {
    // [rows the training pass is sized for, micro-batch budget]: the last computes micro-batches of <= 64
    // rows over 64 rows of a 200-row pass (LoraBackwardPass.computedRows), not over all 200.
    for (const [passRows, budget] of [[64, 64], [12, 12], [200, 64]]) {
      it(`${path}, micro-batches of <= ${budget} rows${passRows !== budget ? ` in a ${passRows}-row pass` : ''}: loss within 1e-4, every gradient within 1e-2 relative L2`, async () => {
        const ctx = await gpuFor(path);
        const ckpt = await loadCheckpoint(directorySource(TINY));
        const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 64, maxBatchRows: Math.max(64, passRows), logitsRows: 8 });
        ckpt.release();
        const adapter = await loadAdapter(directorySource(join(TINY, 'adapter')), ckpt.config);
        const backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: passRows, logitsRows: 4 });
        // Reference logprobs come from the engine with the adapter off, not from the fixture.
        const samples = fromFixtureSamples(f.samples.map(({ ref_logprobs: _r, ...s }) => s));
        const r = await grpoLossAndGrads(backend, samples, { epsLow: f.eps_low, epsHigh: f.eps_high, beta: f.beta }, budget);
        r.samples.forEach((s, i) => expect(maxAbsDiff(s.refLogprobs!, f.samples[i].ref_logprobs)).toBeLessThan(2e-3));
        console.info(`[grpo-grad ${path} ≤${budget}] loss ${r.loss} (PyTorch ${f.loss}), rel ${Math.abs(r.loss - f.loss) / f.loss}`);
        expect(r.tokens).toBe(24);
        expect(Math.abs(r.loss - f.loss) / Math.abs(f.loss)).toBeLessThan(1e-4);
        const got = await backend.readGradients();
        expect(got.size).toBe(want.size);
        let worst = 0;
        for (const [name, g] of got) {
          const w = want.get(name);
          expect(w, name).toBeDefined();
          const e = relL2(g, w!.data);
          worst = Math.max(worst, e);
          expect(e, name).toBeLessThan(1e-2);
        }
        console.info(`[grpo-grad ${path} ≤${budget}] worst gradient relative L2 error ${worst.toExponential(2)} over ${got.size} tensors`);
        backend.destroy();
        rt.destroy();
      });
    }
  }
});
