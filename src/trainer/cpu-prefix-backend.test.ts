// Scoring with shared prefixes (cpu-prefix-backend.ts) gives the whole-sequence backend's logprobs on every loss
// row, with and without the adapter, for sequences that share prompts, share only a prefix (into the reply), or
// repeat exactly, forced tokens or not.
import { describe, expect, it } from 'vitest';
import { toolTaskModel } from '../tasks/tool-task';
import { Rng } from '../util/rng';
import { CpuPolicyBackend } from './cpu-backend';
import { PrefixSharingCpuBackend } from './cpu-prefix-backend';
import { adapterTensors, initLoraAdapter } from './lora-init';
import { packBatch, type TurnSample } from '../model/samples';

describe('PrefixSharingCpuBackend.logprobs', () => {
  it('equals CpuPolicyBackend.logprobs on every loss row', async () => {
    const { config, weights } = toolTaskModel(53, { hiddenSize: 16, numHeads: 2, numKvHeads: 1, intermediateSize: 24, numLayers: 2, modelSeed: 3 });
    const rng = new Rng(11);
    const adapter = initLoraAdapter(config, { r: 2, alpha: 4, baseModelNameOrPath: 'test' }, rng);
    for (const t of adapterTensors(adapter)) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = rng.normal() * 0.3;
    const toks = (n: number) => Array.from({ length: n }, () => rng.int(config.vocabSize));
    const system = toks(20);
    const promptA = [...system, ...toks(6)];
    const promptB = [...system, ...toks(9)];
    const sample = (prompt: number[], response: number[], i: number): TurnSample => ({ groupId: 'g', rolloutId: `r${i}`, turn: 0, promptTokens: prompt, responseTokens: response, reward: i % 2 });
    const samples = [sample(promptA, toks(5), 0), sample(promptB, toks(3), 1), sample(promptA, toks(7), 2), sample(promptA, [], 3), sample(promptB, toks(3), 4), sample(toks(4), toks(4), 5)];
    samples[4] = { ...samples[4], responseTokens: samples[1].responseTokens };
    // Replies that share their opening tokens, then part; and the same reply once with tokens a grammar forced
    // (not loss rows, so not scored) and once without, sorted so the forced one comes first.
    const opening = toks(4);
    samples.push(sample(promptA, [...opening, ...toks(3)], 6), sample(promptA, [...opening, ...toks(2)], 7));
    const reply = toks(6);
    samples.push({ ...sample(promptB, reply, 8), forced: [false, true, true, false, true, false] }, sample(promptB, reply, 9));
    const batch = packBatch(samples.filter((s) => s.responseTokens.length), undefined, config.vocabSize);
    const plain = new CpuPolicyBackend(config, weights, adapter);
    const shared = new PrefixSharingCpuBackend(config, weights, adapter);
    for (const on of [true, false]) {
      const want = await plain.logprobs(batch, on);
      const got = await shared.logprobs(batch, on);
      let rows = 0;
      for (let r = 0; r < batch.rows; r++) {
        if (!batch.lossMask[r]) continue;
        rows++;
        expect(got[r]).toBeCloseTo(want[r], 5);
      }
      expect(rows).toBe(5 + 3 + 7 + 3 + 4 + 7 + 6 + 3 + 6);
    }
  });
});
