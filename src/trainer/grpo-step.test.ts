// One Flow-GRPO step on the CPU backend, checked against independent computations: the statistics it
// reports, the optimizer-step count over epochs × mini-batches, the recomputation of missing old
// logprobs, and the update equal to a hand-driven AdamW on the float64 gradient.
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng';
import { adamwUpdate, clipFactor } from './adamw-cpu';
import { resolveGrpoConfig } from './grpo-config';
import { CpuPolicyBackend } from './cpu-backend';
import { cpuBackward, cpuForward, zeroLoraGrads } from './cpu-model';
import { grpoStep, learningRateAt, rolloutRewardMean } from './grpo-step';
import { adapterTensors, cloneAdapter, initLoraAdapter } from './lora-init';
import { grpoLoss } from '../model/loss';
import { groupAdvantages } from '../agent/advantages';
import { ToyTask, toyModel } from './toy-task';
import type { TurnSample } from '../model/samples';
import { refEntropy } from '../../tests/support/qwen2-ref';

const task = new ToyTask({ numQueries: 4 });
const model = toyModel(task, { seed: 3, hiddenSize: 16, intermediateSize: 24, numLayers: 1 });

function batch(): TurnSample[] {
  const A = task.action.bind(task);
  // group g1: rollouts with rewards 1, 0 (2 turns each); group g2: all 0 (no gradient).
  return [
    { groupId: 'g1', rolloutId: 'a', turn: 0, promptTokens: task.turn1Prompt(0), responseTokens: [A(0)], reward: 1 },
    { groupId: 'g1', rolloutId: 'a', turn: 1, promptTokens: task.turn2Prompt(0, A(0), task.resultOf(0)), responseTokens: [A(1)], reward: 1 },
    { groupId: 'g1', rolloutId: 'b', turn: 0, promptTokens: task.turn1Prompt(0), responseTokens: [A(2)], reward: 0 },
    { groupId: 'g1', rolloutId: 'b', turn: 1, promptTokens: task.turn2Prompt(0, A(2), task.ERR), responseTokens: [A(0)], reward: 0 },
    { groupId: 'g2', rolloutId: 'c', turn: 0, promptTokens: task.turn1Prompt(1), responseTokens: [A(0)], reward: 0 },
    { groupId: 'g2', rolloutId: 'd', turn: 0, promptTokens: task.turn1Prompt(1), responseTokens: [A(2)], reward: 0 },
  ];
}

describe('grpoStep', () => {
  it('recomputes old logprobs, reports stats, and applies AdamW to the float64 gradient', async () => {
    const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
    // Nonzero B so the adapter changes the policy and the KL term is not identically zero.
    for (const p of adapter.pairs.values()) p.B.forEach((_, i) => (p.B[i] = 0.05 * Math.sin(i + p.layer)));
    const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
    const cfg = resolveGrpoConfig({ learningRate: 1e-3, beta: 0.1, maxGradNorm: 1e-3, groupSize: 2, queriesPerStep: 2 });
    const samples = batch();
    const st = await grpoStep(backend, samples, cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });

    expect(st.groups).toBe(2);
    expect(st.noGradientGroups).toBe(1);
    expect(st.groupStats.find((g) => g.groupId === 'g2')?.noGradient).toBe(true);
    expect(st.rewardMean).toBe(rolloutRewardMean(samples));
    expect(st.rewardMean).toBe(0.25);
    expect(st.samples).toBe(6);
    expect(st.responseTokens).toBe(6);
    expect(st.optimizerSteps).toBe(1);
    // On-policy first update: old = current (recomputed, stored as f32), so rho = 1 and nothing is clipped.
    expect(st.clipFraction).toBe(0);
    expect(st.ratioMean).toBeCloseTo(1, 6);

    // Independent: float64 gradient of the same loss with ref = base, old = current, then torch AdamW.
    const g = zeroLoraGrads(adapter);
    // rewards of g1 turns: 1,1,0,0 -> mean .5, unbiased std sqrt(1/3) -> A = ±0.5*sqrt(3) = ±0.866025 (÷ (std+1e-6))
    const std = Math.sqrt(1 / 3);
    const A = [0.5 / (std + 1e-6), 0.5 / (std + 1e-6), -0.5 / (std + 1e-6), -0.5 / (std + 1e-6), 0, 0];
    expect(A[0]).toBeCloseTo(0.8660254, 5);
    let kl = 0;
    for (const [i, s] of samples.entries()) {
      const toks = [...s.promptTokens, ...s.responseTokens];
      const p = s.promptTokens.length;
      const fw = cpuForward(model.config, model.weights, toks, adapter);
      const ref = cpuForward(model.config, model.weights, toks, null).logprobs;
      const mask = Array.from(fw.logprobs, (_, t) => (t === p - 1 ? 1 : 0));
      const r = grpoLoss({ logp: fw.logprobs, old: fw.logprobs, ref, adv: mask.map(() => A[i]), mask }, { epsLow: cfg.epsLow, epsHigh: cfg.epsHigh, beta: cfg.beta }, 6);
      kl += r.sums.kl;
      cpuBackward(model.config, model.weights, fw, r.dlogp, adapter, g);
    }
    expect(st.kl).toBeCloseTo(kl / 6, 7);
    let ss = 0;
    for (const v of g.values()) for (const x of [...v.A, ...v.B]) ss += x * x;
    expect(Math.abs(st.gradNorm - Math.sqrt(ss)) / Math.sqrt(ss)).toBeLessThan(1e-5);
    const expected = cloneAdapter(adapter);
    for (const t of adapterTensors(expected)) {
      const gr = g.get(t.key)![t.which];
      adamwUpdate(t.data, gr, new Float32Array(t.data.length), new Float32Array(t.data.length), { lr: cfg.learningRate, beta1: cfg.adamBeta1, beta2: cfg.adamBeta2, eps: cfg.adamEps, weightDecay: cfg.weightDecay, step: 1, gradScale: clipFactor(Math.sqrt(ss), cfg.maxGradNorm) });
    }
    const got = adapterTensors(backend.currentAdapter);
    adapterTensors(expected).forEach((t, i) => {
      for (let j = 0; j < t.data.length; j++) expect(got[i].data[j]).toBeCloseTo(t.data[j], 6);
    });
    // The update moved the parameters (the clip kept the step small but nonzero).
    expect(got.some((t, i) => t.data.some((v, j) => v !== adapter.pairs.get(t.key)![t.which][j]))).toBe(true);
  });

  it('counts optimizer steps over epochs × mini-batches and refuses an empty batch', async () => {
    const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)));
    const cfg = resolveGrpoConfig({ epochs: 3, miniBatches: 2, groupSize: 2, queriesPerStep: 2 });
    const rng = new Rng(4);
    const st = await grpoStep(backend, batch(), cfg, { step: 5, optimizerSteps: 10, random: () => rng.next() });
    expect(st.optimizerSteps).toBe(16);
    await expect(grpoStep(backend, [], cfg, { step: 1, optimizerSteps: 0, random: Math.random })).rejects.toThrow(/no samples/);
  });

  describe('a NaN or infinity before AdamW', () => {
    const fresh = () => {
      const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
      for (const p of adapter.pairs.values()) p.B.forEach((_, i) => (p.B[i] = 0.05 * Math.cos(i + p.layer)));
      return new CpuPolicyBackend(model.config, model.weights, adapter);
    };
    const state = async (b: CpuPolicyBackend) => {
      const { adapter, moments } = await b.exportState();
      return { params: adapterTensors(adapter).map((t) => [...t.data]), moments: [...moments.values()].map((mv) => [...mv.m, ...mv.v]) };
    };
    /** The batch with rollout b's first recorded old logprob -Infinity: its negative advantage makes rho·A = -Infinity. */
    const poisoned = () => batch().map((s) => (s.rolloutId === 'b' && s.turn === 0 ? { ...s, oldLogprobs: [-Infinity] } : s));

    it('a non-finite loss skips the update: adapter, moments and optimizer steps unchanged, and the stats say why', async () => {
      const backend = fresh();
      // Earlier updates' moments must survive the skip too.
      await grpoStep(backend, batch(), resolveGrpoConfig({ learningRate: 1e-3, groupSize: 2, queriesPerStep: 2 }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      const before = await state(backend);
      const cfg = resolveGrpoConfig({ learningRate: 1e-3, groupSize: 2, queriesPerStep: 2 });
      const st = await grpoStep(backend, poisoned(), cfg, { step: 2, optimizerSteps: 1, random: () => 0.5 });
      expect(st.skipped).toBe('non-finite loss');
      expect(st.skippedUpdates).toBe(1);
      expect(st.step).toBe(2);
      expect(st.optimizerSteps).toBe(1);
      expect(Number.isFinite(st.loss)).toBe(false);
      expect(await state(backend)).toEqual(before);
    });

    it('a non-finite gradient norm with a finite loss skips the update the same way', async () => {
      const backend = fresh();
      const before = await state(backend);
      let adamwCalls = 0;
      const nanNorm = Object.assign(Object.create(backend) as CpuPolicyBackend, {
        gradNorm: async () => NaN,
        adamw: async () => void adamwCalls++,
      });
      const st = await grpoStep(nanNorm, batch(), resolveGrpoConfig({ groupSize: 2, queriesPerStep: 2 }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      expect(st.skipped).toBe('non-finite gradient norm');
      expect(Number.isFinite(st.loss)).toBe(true);
      expect(st.gradNorm).toBeNaN();
      expect(adamwCalls).toBe(0);
      expect(st.optimizerSteps).toBe(0);
      expect(await state(backend)).toEqual(before);
    });

    it('skips only the bad mini-batch: the other one updates, and a clean step reports no skip', async () => {
      const backend = fresh();
      const cfg = resolveGrpoConfig({ learningRate: 1e-3, miniBatches: 2, groupSize: 2, queriesPerStep: 2 });
      const before = await state(backend);
      const st = await grpoStep(backend, poisoned(), cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });
      expect(st.skippedUpdates).toBe(1);
      expect(st.optimizerSteps).toBe(1);
      expect((await state(backend)).params).not.toEqual(before.params);
      const clean = await grpoStep(backend, batch(), cfg, { step: 2, optimizerSteps: 1, random: () => 0.5 });
      expect(clean.skipped).toBeUndefined();
      expect(clean.skippedUpdates).toBeUndefined();
      expect(clean.optimizerSteps).toBe(3);
    });
  });

  it('with beta = 0 takes no optimizer step when every group is all-equal, and scores no reference logprobs: adapter and AdamW moments stay, even with momentum', async () => {
    const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
    const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
    const cfg = resolveGrpoConfig({ learningRate: 1e-2, beta: 0, groupSize: 2, queriesPerStep: 2 });
    // A step with signal first, so AdamW has momentum that would keep moving the weights.
    const first = await grpoStep(backend, batch(), cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });
    expect(first.optimizerSteps).toBe(1);
    expect(first.noSignal).toBeUndefined();
    const before = await backend.exportState();
    const solved = batch().map((s) => ({ ...s, reward: s.groupId === 'g1' ? 1 : 0 }));
    const adapterOff: boolean[] = [];
    const logprobs = backend.logprobs.bind(backend);
    backend.logprobs = (b, on) => (adapterOff.push(!on), logprobs(b, on));
    const st = await grpoStep(backend, solved, cfg, { step: 2, optimizerSteps: 1, random: () => 0.5 });
    expect(st.noSignal).toBe(true);
    expect(st.noGradientGroups).toBe(2);
    expect(st.optimizerSteps).toBe(1);
    expect(st.gradNorm).toBe(0);
    expect(st.loss).toBe(0);
    expect(adapterOff).not.toContain(true); // no reference scoring for a step with no update
    expect(st.kl).toBeNaN();
    const after = await backend.exportState();
    for (const [name, mv] of before.moments) {
      expect(after.moments.get(name)!.m).toEqual(mv.m);
      expect(after.moments.get(name)!.v).toEqual(mv.v);
    }
    const w0 = adapterTensors(before.adapter).map((t) => Array.from(t.data));
    expect(adapterTensors(after.adapter).map((t) => Array.from(t.data))).toEqual(w0);
  });

  it("with the batch baseline, a solved group beside a failed one is signal: beta = 0 still takes the step, whether the advantages are computed here or carried", async () => {
    const cfg = resolveGrpoConfig({ learningRate: 1e-2, beta: 0, groupSize: 2, queriesPerStep: 2, advantageBaseline: 'batch' });
    const solved = batch().map((s) => ({ ...s, reward: s.groupId === 'g1' ? 1 : 0 }));
    const carried = groupAdvantages(solved, cfg.advantageEps, cfg.advantageStd, 'batch').advantages;
    expect(carried.every((a) => a !== 0)).toBe(true);
    for (const samples of [solved, solved.map((s, i) => ({ ...s, advantage: carried[i] }))]) {
      const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)));
      const w0 = adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data));
      const st = await grpoStep(backend, samples, cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });
      expect(st.noSignal).toBeUndefined();
      expect(st.noGradientGroups).toBe(0);
      expect(st.optimizerSteps).toBe(1);
      expect(st.gradNorm).toBeGreaterThan(0);
      expect(adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data))).not.toEqual(w0);
    }
  });

  it('with beta = 0 scores no reference logprobs on a step that updates either: kl is not measured, and the update is the one a scored reference gives', async () => {
    const cfg = resolveGrpoConfig({ learningRate: 1e-2, beta: 0, epochs: 2, groupSize: 2, queriesPerStep: 2 });
    const run = async (samples: TurnSample[]) => {
      const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
      for (const p of adapter.pairs.values()) p.B.forEach((_, i) => (p.B[i] = 0.05 * Math.cos(i + p.layer)));
      const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
      const adapterOff: boolean[] = [];
      const logprobs = backend.logprobs.bind(backend);
      backend.logprobs = (b, on) => (adapterOff.push(!on), logprobs(b, on));
      const st = await grpoStep(backend, samples, cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return { st, adapterOff, params: adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data)) };
    };
    const skipped = await run(batch());
    expect(skipped.adapterOff).not.toContain(true);
    expect(skipped.st.kl).toBeNaN();
    expect(skipped.st.optimizerSteps).toBe(2);
    expect(skipped.st.skipped).toBeUndefined();
    // The same batch carrying reference logprobs (here far from the policy, so a KL term would matter): kl is
    // measured, and beta = 0 leaves it out of the update, which is the same to the last bit.
    const withRef = await run(batch().map((s) => ({ ...s, refLogprobs: s.responseTokens.map(() => -3) })));
    expect(withRef.adapterOff).not.toContain(true);
    expect(withRef.st.kl).toBeGreaterThan(0);
    expect(withRef.params).toEqual(skipped.params);
    expect(withRef.st.loss).toBe(skipped.st.loss);
    expect(skipped.params).not.toEqual((await run(batch().map((s) => ({ ...s, reward: 0 })))).params);
  });

  it('lrBySignal scales an update by the share of groups with a reward spread, and leaves a step with no signal at the full rate', async () => {
    const run = async (over: Parameters<typeof resolveGrpoConfig>[0], samples = batch()) => {
      const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)));
      await grpoStep(backend, samples, resolveGrpoConfig({ beta: 0, groupSize: 2, queriesPerStep: 2, ...over }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data));
    };
    // batch(): g1 has a spread, g2 is all-failed, so half the rate.
    const scaled = await run({ learningRate: 1e-2, lrBySignal: true });
    expect(scaled).toEqual(await run({ learningRate: 5e-3 }));
    expect(scaled).not.toEqual(await run({ learningRate: 1e-2 }));
    // Every group with a spread: the full rate.
    const both = batch().map((s) => (s.groupId === 'g2' && s.rolloutId === 'c' ? { ...s, reward: 1 } : s));
    expect(await run({ learningRate: 1e-2, lrBySignal: true }, both)).toEqual(await run({ learningRate: 1e-2 }, both));
    // No group with a spread and beta > 0: the KL step keeps the full rate.
    const none = batch().map((s) => ({ ...s, reward: 0, refLogprobs: s.responseTokens.map(() => -3) }));
    const kl = await run({ learningRate: 1e-2, beta: 0.1, lrBySignal: true }, none);
    expect(kl).toEqual(await run({ learningRate: 1e-2, beta: 0.1 }, none));
  });

  it('entropyCoef adds an entropy bonus on the CPU backend (a step raises the entropy at its response rows), rides on updates only, and is refused by a backend without it', async () => {
    const entropyAt = (adapter: ReturnType<typeof initLoraAdapter>, samples: TurnSample[]) => {
      // Mean entropy of the next-token distribution where each distinct turn's response begins.
      const prompts = [...new Map(samples.map((s) => [s.promptTokens.join(','), s.promptTokens])).values()];
      const V = model.config.vocabSize;
      return prompts.reduce((sum, p) => {
        return sum + refEntropy(cpuForward(model.config, model.weights, p, adapter).logits.subarray((p.length - 1) * V, p.length * V));
      }, 0) / prompts.length;
    };
    const run = async (entropyCoef: number, samples = batch(), backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)))) => {
      const stats = await grpoStep(backend, samples, resolveGrpoConfig({ beta: 0, groupSize: 2, queriesPerStep: 2, learningRate: 5e-2, entropyCoef }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return { adapter: backend.currentAdapter, stats };
    };
    const plain = await run(0);
    const bonus = await run(2);
    expect(adapterTensors(bonus.adapter).map((t) => Array.from(t.data))).not.toEqual(adapterTensors(plain.adapter).map((t) => Array.from(t.data)));
    expect(entropyAt(bonus.adapter, batch())).toBeGreaterThan(entropyAt(plain.adapter, batch()) + 1e-3);
    // No reward spread and beta 0: no update, bonus or not.
    const none = batch().map((s) => ({ ...s, reward: 0 }));
    const start = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
    const still = await run(2, none);
    expect(still.stats.noSignal).toBe(true);
    expect(adapterTensors(still.adapter).map((t) => Array.from(t.data))).toEqual(adapterTensors(start).map((t) => Array.from(t.data)));
    class NoEntropyBackend extends CpuPolicyBackend {
      override readonly entropyBonus = false;
    }
    await expect(run(0.01, batch(), new NoEntropyBackend(model.config, model.weights, start))).rejects.toThrow(/Flow-GRPO setting 'entropyCoef' is 0.01, but this training backend has no entropy bonus/);
    expect(() => resolveGrpoConfig({ entropyCoef: -0.1 })).toThrow(/'entropyCoef' must be a finite number >= 0/);
  });

  it("entropyOver 'choices' spreads only the recorded choices: a step raises the entropy over a row's choice groups, rows without them get no bonus, and a batch with none recorded is refused", async () => {
    const V = model.config.vocabSize;
    // Every turn's one response token was drawn against the next two ids, which lead to one other outcome.
    const choiceOf = (t: number) => [[t], [(t + 1) % V, (t + 2) % V]];
    const withSets = () => batch().map((s) => ({ ...s, choices: [choiceOf(s.responseTokens[0])] }));
    const run = async (over: Parameters<typeof resolveGrpoConfig>[0], samples: TurnSample[]) => {
      const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)));
      await grpoStep(backend, samples, resolveGrpoConfig({ beta: 0, groupSize: 2, queriesPerStep: 2, learningRate: 5e-2, ...over }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return backend.currentAdapter;
    };
    const tensors = (a: ReturnType<typeof initLoraAdapter>) => adapterTensors(a).map((t) => Array.from(t.data));
    // Mean entropy over each distinct turn's choice groups, where its response begins.
    const choiceEntropy = (adapter: ReturnType<typeof initLoraAdapter>) => {
      const turns = [...new Map(withSets().map((s) => [`${s.promptTokens.join(',')}|${s.responseTokens[0]}`, s])).values()];
      return turns.reduce((sum, s) => {
        const p = s.promptTokens;
        return sum + refEntropy(cpuForward(model.config, model.weights, p, adapter).logits.subarray((p.length - 1) * V, p.length * V), s.choices[0]);
      }, 0) / turns.length;
    };
    const plain = await run({}, withSets());
    // A first AdamW step moves every weight by about the learning rate whatever the gradient's size: a large
    // coefficient makes the bonus decide the signs, so the step climbs the choices' entropy (+1.2e-3 over the
    // plain step's, measured; a sign flip in its gradient gives less than the plain step).
    const overChoices = await run({ entropyCoef: 1000, entropyOver: 'choices' }, withSets());
    const overVocabulary = await run({ entropyCoef: 1000 }, withSets());
    expect(choiceEntropy(overChoices)).toBeGreaterThan(choiceEntropy(plain) + 5e-4);
    expect(tensors(overChoices)).not.toEqual(tensors(overVocabulary));
    // Choices recorded as null (none there): no bonus, the plain step to the bit.
    const noSets = batch().map((s) => ({ ...s, choices: [null] }));
    expect(tensors(await run({ entropyCoef: 2, entropyOver: 'choices' }, noSets))).toEqual(tensors(await run({}, noSets)));
    await expect(run({ entropyCoef: 2, entropyOver: 'choices' }, batch())).rejects.toThrow(/Flow-GRPO setting 'entropyOver' is 'choices', but none of this step's 6 planner turns recorded its choice sets/);
    expect(() => resolveGrpoConfig({ entropyOver: 'tokens' as never })).toThrow(/'entropyOver' must be one of 'vocabulary', 'choices' \(got "tokens"\)/);
  });

  it("entropyGroups 'all-failed' gives the bonus to the turns of groups no rollout solved, and to no others", async () => {
    const V = model.config.vocabSize;
    const run = async (over: Parameters<typeof resolveGrpoConfig>[0], samples = batch()) => {
      const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1)));
      await grpoStep(backend, samples, resolveGrpoConfig({ beta: 0, groupSize: 2, queriesPerStep: 2, learningRate: 5e-2, ...over }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return backend.currentAdapter;
    };
    const tensors = (a: ReturnType<typeof initLoraAdapter>) => adapterTensors(a).map((t) => Array.from(t.data));
    // Entropy where g2's turns (query 1, all failed) begin their response.
    const g2Entropy = (a: ReturnType<typeof initLoraAdapter>) => {
      const p = task.turn1Prompt(1);
      return refEntropy(cpuForward(model.config, model.weights, p, a).logits.subarray((p.length - 1) * V, p.length * V));
    };
    const plain = await run({});
    const failedOnly = await run({ entropyCoef: 1000, entropyGroups: 'all-failed' });
    expect(g2Entropy(failedOnly)).toBeGreaterThan(g2Entropy(plain) + 1e-3);
    expect(tensors(failedOnly)).not.toEqual(tensors(await run({ entropyCoef: 1000 })));
    // Every group with a spread: no turn takes the bonus, the plain step to the bit.
    const both = batch().map((s) => (s.groupId === 'g2' && s.rolloutId === 'c' ? { ...s, reward: 1 } : s));
    expect(tensors(await run({ entropyCoef: 1000, entropyGroups: 'all-failed' }, both))).toEqual(tensors(await run({}, both)));
    expect(() => resolveGrpoConfig({ entropyGroups: 'failed' as never })).toThrow(/'entropyGroups' must be one of 'all', 'all-failed' \(got "failed"\)/);
  });

  it('maxUpdateKl bounds an update in policy space: the KL it reports is an independent float64 one from the sampling policy, an update over it is scaled back toward the start, and AdamW keeps the full update\'s moments', async () => {
    const V = model.config.vocabSize;
    const start = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
    for (const p of start.pairs.values()) p.B.forEach((_, i) => (p.B[i] = 0.05 * Math.cos(i + p.layer)));
    // Float64 log p of each response token, by a forward of its own (not the backend's scoring).
    const logpOf = (adapter: typeof start, s: TurnSample) => {
      const { logits } = cpuForward(model.config, model.weights, [...s.promptTokens, ...s.responseTokens], adapter);
      return s.responseTokens.map((t, k) => {
        const row = logits.subarray((s.promptTokens.length - 1 + k) * V, (s.promptTokens.length + k) * V);
        const max = Math.max(...row);
        return row[t] - max - Math.log(row.reduce((z, x) => z + Math.exp(x - max), 0));
      });
    };
    const samples = batch().map((s) => ({ ...s, oldLogprobs: logpOf(start, s) }));
    const klFromSampling = (adapter: typeof start) => {
      const ds = samples.flatMap((s) => logpOf(adapter, s).map((lp, k) => lp - s.oldLogprobs[k]));
      return ds.reduce((sum, d) => sum + Math.expm1(d) - d, 0) / ds.length;
    };
    const run = async (maxUpdateKl: number) => {
      const backend = new CpuPolicyBackend(model.config, model.weights, cloneAdapter(start));
      const st = await grpoStep(backend, samples, resolveGrpoConfig({ learningRate: 5e-2, beta: 0, groupSize: 2, queriesPerStep: 2, maxUpdateKl }), { step: 1, optimizerSteps: 0, random: () => 0.5 });
      return { st, state: await backend.exportState() };
    };
    const tensors = (a: typeof start) => adapterTensors(a).map((t) => Array.from(t.data));
    const plain = await run(0);
    expect(plain.st.trustRegion).toBeUndefined();
    const full = klFromSampling(plain.state.adapter);
    expect(full).toBeGreaterThan(1e-4);
    // A bound it is under: measured, nothing kept back.
    const loose = await run(1e9);
    expect(loose.st.trustRegion!.scale).toBe(1);
    expect(Math.abs(loose.st.trustRegion!.kl - full)).toBeLessThan(1e-5 * full + 1e-9);
    expect(tensors(loose.state.adapter)).toEqual(tensors(plain.state.adapter));
    // A tenth of it: the update shrinks along its own direction until the policy is within the bound.
    const held = await run(full / 10);
    const { kl, scale } = held.st.trustRegion!;
    expect(scale).toBeGreaterThan(0);
    expect(scale).toBeLessThan(1);
    expect(kl).toBeLessThanOrEqual(full / 10);
    expect(Math.abs(klFromSampling(held.state.adapter) - kl)).toBeLessThan(1e-5 * kl + 1e-9);
    const from = tensors(start);
    const to = tensors(plain.state.adapter);
    tensors(held.state.adapter).forEach((t, i) => t.forEach((x, j) => expect(Math.abs(x - (from[i][j] + scale * (to[i][j] - from[i][j])))).toBeLessThan(1e-6)));
    for (const [name, mv] of plain.state.moments) {
      expect(held.state.moments.get(name)!.m).toEqual(mv.m);
      expect(held.state.moments.get(name)!.v).toEqual(mv.v);
    }
    expect(() => resolveGrpoConfig({ maxUpdateKl: -1 })).toThrow(/'maxUpdateKl' must be a finite number >= 0/);
  });

  it('with beta > 0 a step whose groups are all-equal still descends the KL term alone (Flow-GRPO never drops the step)', async () => {
    const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
    // An adapter off the reference (B is zero at init), with no AdamW momentum: the KL term has a gradient.
    const rng = new Rng(5);
    for (const t of adapterTensors(adapter)) for (let i = 0; i < t.data.length; i++) t.data[i] = 0.3 * (rng.next() - 0.5);
    const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
    // A small rate: Adam's first step moves every weight by about the rate, which at 1e-2 overshoots this KL.
    const cfg = resolveGrpoConfig({ learningRate: 1e-4, beta: 0.1, groupSize: 2, queriesPerStep: 2 });
    const before = await backend.exportState();
    const solved = batch().map((s) => ({ ...s, reward: s.groupId === 'g1' ? 1 : 0 }));
    const st = await grpoStep(backend, solved, cfg, { step: 1, optimizerSteps: 0, random: () => 0.5 });
    expect(st.noSignal).toBe(true);
    expect(st.optimizerSteps).toBe(1);
    expect(st.kl).toBeGreaterThan(0);
    expect(st.gradNorm).toBeGreaterThan(0);
    // The loss is beta × KL alone: the policy term of all-zero advantages at ratio 1 is 0.
    expect(st.loss).toBeCloseTo(cfg.beta * st.kl, 12);
    const after = await backend.exportState();
    const w0 = adapterTensors(before.adapter).map((t) => Array.from(t.data));
    expect(adapterTensors(after.adapter).map((t) => Array.from(t.data))).not.toEqual(w0);
    // It moved toward the reference: the next such step measures a smaller KL.
    const next = await grpoStep(backend, solved, cfg, { step: 2, optimizerSteps: 1, random: () => 0.5 });
    expect(next.kl).toBeLessThan(st.kl);
  });

  it('trains on the advantages the samples carry: the run\'s computed ones give the float64-identical step, other ones another', async () => {
    const cfg = resolveGrpoConfig({ learningRate: 1e-3, beta: 0.1, epochs: 2, miniBatches: 2, groupSize: 2, queriesPerStep: 2 });
    const run = async (samples: TurnSample[]) => {
      const adapter = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(1));
      for (const p of adapter.pairs.values()) p.B.forEach((_, i) => (p.B[i] = 0.05 * Math.sin(i + p.layer)));
      const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
      const rng = new Rng(8);
      const { ms: _ms, tokensPerSecond: _tps, ...st } = await grpoStep(backend, samples, cfg, { step: 1, optimizerSteps: 0, random: () => rng.next() });
      return { st, params: adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data)) };
    };
    const plain = await run(batch());
    const { advantages } = groupAdvantages(batch(), cfg.advantageEps);
    const carried = await run(batch().map((s, i) => ({ ...s, advantage: advantages[i] })));
    expect(carried.st).toEqual(plain.st);
    expect(carried.params).toEqual(plain.params);
    // The carried values are the ones used: flipped advantages move the adapter elsewhere, same group statistics.
    const flipped = await run(batch().map((s, i) => ({ ...s, advantage: -advantages[i] })));
    expect(flipped.st.groupStats).toEqual(plain.st.groupStats);
    expect(flipped.params).not.toEqual(plain.params);
    await expect(run(batch().map((s, i) => ({ ...s, advantage: i === 2 ? NaN : advantages[i] })))).rejects.toThrow("grpoStep: sample 2 (rollout 'b', turn 0) carries advantage NaN");
  });

  it('decays the learning rate on a cosine from learningRate to learningRate × lrFinalRatio at lrDecaySteps', () => {
    const cfg = resolveGrpoConfig({ learningRate: 0.01, lrDecaySteps: 101, lrFinalRatio: 0.1 });
    expect(learningRateAt(cfg, 1)).toBeCloseTo(0.01, 12);
    expect(learningRateAt(cfg, 51)).toBeCloseTo(0.0055, 12);
    expect(learningRateAt(cfg, 101)).toBeCloseTo(0.001, 12);
    expect(learningRateAt(cfg, 500)).toBeCloseTo(0.001, 12);
    expect(learningRateAt(resolveGrpoConfig({ learningRate: 0.01 }), 500)).toBe(0.01);
  });
});
