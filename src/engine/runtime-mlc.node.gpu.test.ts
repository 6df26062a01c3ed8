// The runtime on the web-llm q4f16_1 fixture, loaded through io/checkpoint (dequantized, under Hugging
// Face names) with its PEFT adapter on the unfused modules. The GPU holds the dequantized weights in
// f16, which is not exact for 4-bit x f16-scale products: against the float64 reference over those same
// f16 values the error is arithmetic only (2e-3); against expected.json (exact dequantization) the
// rounding adds about 2.5e-3, so that comparison uses 6e-3. Greedy decoding matches exactly.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gpuFor } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { readFixtureAdapter, refWeightsFromTensors, TINY_MLC, type MlcFixtureExpected } from '../../tests/support/qwen2-fixture';
import { qwen2RefForward } from '../../tests/support/qwen2-ref';
import { loadAdapter, loadCheckpoint } from './io/checkpoint';
import { directorySource } from './io/sources';
import { Qwen2Runtime } from './runtime';

const expected = JSON.parse(readFileSync(join(TINY_MLC, 'expected.json'), 'utf8')) as MlcFixtureExpected;

describe('Qwen2 runtime on the MLC q4f16_1 fixture', () => {
  it('scores with and without the adapter and decodes greedily', async () => {
    const ctx = await gpuFor('packed');
    const ckpt = await loadCheckpoint(directorySource(TINY_MLC));
    const ref = refWeightsFromTensors(ckpt.config, ckpt.tensors);
    const refAdapter = readFixtureAdapter(join(TINY_MLC, 'adapter'), ckpt.config.numLayers);
    const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 128 });
    try {
      await rt.addAdapter('mlc', await loadAdapter(directorySource(join(TINY_MLC, 'adapter')), ckpt.config));
      const seqs = expected.forward.map((f) => f.tokens);
      for (const id of [null, 'mlc'] as const) {
        rt.setActiveAdapter(id);
        const got = await rt.score(seqs);
        expected.forward.forEach((f, i) => {
          const want = qwen2RefForward(ckpt.config, ref, f.tokens, id ? refAdapter : undefined).logprobs;
          expect(maxAbsDiff(got[i], want)).toBeLessThan(2e-3);
          expect(maxAbsDiff(got[i], id ? f.logprobs_adapter : f.logprobs_base)).toBeLessThan(6e-3);
        });
      }
      rt.setActiveAdapter('mlc');
      const g = expected.greedy;
      const out = await rt.generate(g.prompt, { maxNewTokens: g.continuation.length, temperature: 0 });
      expect(out.tokens).toEqual(g.continuation);
    } finally {
      rt.destroy();
    }
  });
});
