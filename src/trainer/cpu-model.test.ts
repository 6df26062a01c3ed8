// The float64 CPU backward against the PyTorch fixture (loss and every LoRA gradient of the Flow-GRPO
// loss) and against central finite differences on a random GQA model with an untied head.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { TINY, readFixtureAdapter, readFixtureWeights, readSafetensorsF32 } from '../../tests/support/qwen2-fixture';
import { qwen2RefForward, refEntropy } from '../../tests/support/qwen2-ref';
import { randomAdapter, randomQwen2, randomTokens } from '../../tests/support/random-qwen2';
import { loraToRefAdapter, refAdapterToLora, toQwen2Config } from '../../tests/support/toy-ref';
import { relL2, maxAbsDiff } from '../../tests/support/compare';
import { Rng } from '../util/rng';
import { cpuBackward, cpuForward, zeroLoraGrads, type LoraGrads } from './cpu-model';
import type { LoraAdapter } from '../io/peft';
import { adapterTensors } from './lora-init';
import { grpoLoss } from '../model/loss';

/** Central finite difference of `objective` in entry i of `data` (restored afterwards). */
function centralDifference(data: Float32Array, i: number, objective: () => number, h = 1e-3): number {
  const orig = data[i];
  data[i] = orig + h;
  const up = objective();
  data[i] = orig - h;
  const dn = objective();
  data[i] = orig;
  return (up - dn) / (2 * h);
}

/**
 * Checks one random entry of every A and B of `grads` against central finite differences of `objective`, and
 * counts the entries where `grads` stands apart from `other` (the same backward without the term under test) by
 * far more than the check's tolerance.
 */
function checkEntryPerTensor(adapter: LoraAdapter, grads: LoraGrads, other: LoraGrads | null, objective: () => number, rng: Rng): { checked: number; apart: number } {
  let checked = 0;
  let apart = 0;
  for (const p of adapter.pairs.values()) {
    for (const which of ['A', 'B'] as const) {
      const i = rng.int(p[which].length);
      const fd = centralDifference(p[which], i, objective);
      const key = `${p.layer}.${p.module}`;
      const an = grads.get(key)![which][i];
      // f32 storage of the perturbed entry limits the FD to ~1e-6 absolute.
      expect(Math.abs(an - fd), `${key}.${which}[${i}]`).toBeLessThan(2e-5 + 1e-3 * Math.abs(fd));
      if (other && Math.abs(an - other.get(key)![which][i]) > 1e-3 + 1e-2 * Math.abs(fd)) apart++;
      checked++;
    }
  }
  return { checked, apart };
}

describe('float64 CPU forward/backward with LoRA', () => {
  it('matches the fixture Flow-GRPO loss and all LoRA gradients', () => {
    const { config, weights } = readFixtureWeights();
    const ref = readFixtureAdapter(undefined, config.numLayers);
    const adapter = refAdapterToLora(ref, config, 8);
    const f = JSON.parse(readFileSync(join(TINY, 'expected.json'), 'utf8')).flowgrpo;
    const cfg = toQwen2Config(config);
    const grads = zeroLoraGrads(adapter);
    const N = f.samples.reduce((n: number, s: { tokens: number[]; prompt_len: number }) => n + s.tokens.length - s.prompt_len, 0);
    let loss = 0;
    for (const s of f.samples) {
      const fw = cpuForward(cfg, weights, s.tokens, adapter);
      const T = s.tokens.length;
      const p = s.prompt_len;
      // Rows p-1 .. T-2 predict the response tokens.
      const resp = Array.from(fw.logprobs.subarray(p - 1));
      expect(maxAbsDiff(resp, s.cur_logprobs)).toBeLessThan(1e-9);
      const mask = Array.from({ length: T - 1 }, (_, t) => (t >= p - 1 ? 1 : 0));
      const pad = (a: number[]) => [...new Array(p - 1).fill(0), ...a];
      const r = grpoLoss({ logp: fw.logprobs, old: pad(s.old_logprobs), ref: pad(s.ref_logprobs), adv: mask.map(() => s.advantage), mask }, { epsLow: f.eps_low, epsHigh: f.eps_high, beta: f.beta }, N);
      loss += r.loss;
      cpuBackward(cfg, weights, fw, r.dlogp, adapter, grads);
    }
    expect(Math.abs(loss - f.loss) / f.loss).toBeLessThan(1e-9);
    const want = readSafetensorsF32(join(TINY, 'flowgrpo_grads.safetensors'));
    const names = adapterTensors(adapter);
    expect(names.length).toBe(want.size);
    for (const t of names) {
      const g = grads.get(t.key)!;
      const w = want.get(t.name);
      expect(w, t.name).toBeDefined();
      // f32 gradients from PyTorch vs float64 here: 1e-5 relative is far below the GPU's 1e-2 budget.
      expect(relL2(t.which === 'A' ? g.A : g.B, w!.data), t.name).toBeLessThan(1e-5);
    }
  });

  it('gradients match central finite differences of the reference model (GQA, untied head)', () => {
    const { config, weights } = randomQwen2(11, { hiddenSize: 24, numHeads: 3, numKvHeads: 1, headDim: 8, intermediateSize: 20, vocabSize: 17, tie: false, numLayers: 2 });
    const refAd = randomAdapter(12, config, 2, 4);
    const adapter = refAdapterToLora(refAd, config, 4);
    const cfg = toQwen2Config(config);
    const rng = new Rng(5);
    const tokens = randomTokens(rng, 7, config.vocabSize);
    const c = Array.from({ length: 6 }, () => rng.normal());
    // Objective Σ c_t logp_t, evaluated by the independent reference forward.
    const objective = () => {
      const lp = qwen2RefForward(config, weights, tokens, loraToRefAdapter(adapter, config.numLayers)).logprobs;
      return lp.reduce((s, v, t) => s + c[t] * v, 0);
    };
    const fw = cpuForward(cfg, weights, tokens, adapter);
    const grads = zeroLoraGrads(adapter);
    cpuBackward(cfg, weights, fw, c, adapter, grads);
    expect(checkEntryPerTensor(adapter, grads, null, objective, rng).checked).toBe(28);
  });

  it("the entropy bonus's gradient (dEntropy) matches central finite differences of the reference model's entropies, beside a logp term", () => {
    const { config, weights } = randomQwen2(21, { hiddenSize: 24, numHeads: 3, numKvHeads: 1, headDim: 8, intermediateSize: 20, vocabSize: 17, tie: true, numLayers: 2 });
    const adapter = refAdapterToLora(randomAdapter(22, config, 2, 4), config, 4);
    const cfg = toQwen2Config(config);
    const rng = new Rng(6);
    const tokens = randomTokens(rng, 7, config.vocabSize);
    const c = Array.from({ length: 6 }, (_, t) => (t >= 2 ? rng.normal() : 0));
    const e = Array.from({ length: 6 }, (_, t) => (t >= 3 ? rng.normal() : 0));
    // Objective Σ c_t logp_t + Σ e_t H_t, H_t the entropy of the reference forward's row t.
    const objective = () => {
      const r = qwen2RefForward(config, weights, tokens, loraToRefAdapter(adapter, config.numLayers));
      return r.logprobs.reduce((s, v, t) => s + c[t] * v + e[t] * refEntropy(r.logits[t]), 0);
    };
    const fw = cpuForward(cfg, weights, tokens, adapter);
    const grads = zeroLoraGrads(adapter);
    cpuBackward(cfg, weights, fw, c, adapter, grads, e);
    const without = zeroLoraGrads(adapter);
    cpuBackward(cfg, weights, fw, c, adapter, without);
    const { checked, apart: moved } = checkEntryPerTensor(adapter, grads, without, objective, rng);
    expect(checked).toBe(28);
    // The entropy term is not a rounding: it moves the gradient by far more than the check's tolerance.
    expect(moved).toBeGreaterThan(14);
  });

  it('over choices, the entropy gradient matches central finite differences of the entropies of the renormalised choice groups (rows without choices keep the whole distribution)', () => {
    const { config, weights } = randomQwen2(23, { hiddenSize: 24, numHeads: 3, numKvHeads: 1, headDim: 8, intermediateSize: 20, vocabSize: 17, tie: false, numLayers: 2 });
    const adapter = refAdapterToLora(randomAdapter(24, config, 2, 4), config, 4);
    const cfg = toQwen2Config(config);
    const rng = new Rng(8);
    const tokens = randomTokens(rng, 7, config.vocabSize);
    const c = Array.from({ length: 6 }, (_, t) => (t >= 2 ? rng.normal() : 0));
    const e = Array.from({ length: 6 }, (_, t) => (t >= 2 ? 1 + rng.normal() : 0));
    // Rows 2 and 4 choose among a few ids (row 2's 4 and 9 one outcome: a group of two); rows 3 and 5 have no
    // choices (the whole distribution).
    const choices: Array<number[][] | null> = [null, null, [[1], [4, 9], [12]], null, [[0], [16]], null];
    const objective = () => {
      const r = qwen2RefForward(config, weights, tokens, loraToRefAdapter(adapter, config.numLayers));
      return r.logprobs.reduce((s, v, t) => s + c[t] * v + e[t] * refEntropy(r.logits[t], choices[t] ?? undefined), 0);
    };
    const fw = cpuForward(cfg, weights, tokens, adapter);
    const grads = zeroLoraGrads(adapter);
    cpuBackward(cfg, weights, fw, c, adapter, grads, e, choices);
    const whole = zeroLoraGrads(adapter);
    cpuBackward(cfg, weights, fw, c, adapter, whole, e);
    const { checked, apart: differs } = checkEntryPerTensor(adapter, grads, whole, objective, rng);
    expect(checked).toBe(28);
    // Not the whole-vocabulary bonus under another name.
    expect(differs).toBeGreaterThan(14);
  });
});
