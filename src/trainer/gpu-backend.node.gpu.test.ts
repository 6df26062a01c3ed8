// The GPU backend against the float64 CPU backend on whole Flow-GRPO steps (scoring, backward, global
// norm, clip, AdamW on the GPU), and GPU checkpoint export/import reproducing the next step.
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { relL2 } from '../../tests/support/compare';
import { Qwen2Runtime } from '../engine/runtime';
import { Rng } from '../util/rng';
import { memoryTrainStorage } from './checkpoint-memory';
import { resolveGrpoConfig } from './grpo-config';
import { CpuPolicyBackend, cpuTokenPolicy } from './cpu-backend';
import { GpuPolicyBackend, gpuTokenPolicy } from './gpu-backend';
import { grpoStep } from './grpo-step';
import { adapterTensors, initLoraAdapter } from './lora-init';
import { ToyTask, playToyRollouts, toyModel } from './toy-task';
import { packBatch } from '../model/samples';
import { runtimePolicyHost } from './runtime-policy-host';
import { TrainingHost } from './training-host';

const task = new ToyTask();
const model = toyModel(task, { seed: 77 });

async function gpuBackend(seed: number) {
  const rt = await Qwen2Runtime.create(await gpuFor('native'), model.config, model.source, { maxContext: 16, maxBatchRows: 256 });
  const backend = await GpuPolicyBackend.create(rt, initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(seed)), { maxRows: 256 });
  return { rt, backend };
}

describe('GPU Flow-GRPO backend', () => {
  it('three steps (2 epochs × 2 mini-batches, clip active) match the float64 CPU backend', async () => {
    const cfg = resolveGrpoConfig({ learningRate: 0.01, groupSize: 4, queriesPerStep: 3, epochs: 2, miniBatches: 2, maxGradNorm: 0.05, beta: 0.04, microBatchTokens: 40 });
    const { rt, backend: gpu } = await gpuBackend(5);
    const cpu = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(5)));
    let opt = 0;
    for (let step = 1; step <= 3; step++) {
      // Rollouts from the CPU policy, so both backends train on the same samples.
      const { samples } = await playToyRollouts(task, cpuTokenPolicy(cpu), [0, 1, 2], 4, 1, new Rng(step), `s${step}`);
      const a = await grpoStep(cpu, samples, cfg, { step, optimizerSteps: opt, random: (() => { const r = new Rng(50 + step); return () => r.next(); })() });
      const b = await grpoStep(gpu, samples, cfg, { step, optimizerSteps: opt, random: (() => { const r = new Rng(50 + step); return () => r.next(); })() });
      opt = a.optimizerSteps;
      expect(b.optimizerSteps).toBe(a.optimizerSteps);
      expect(Math.abs(b.gradNorm - a.gradNorm)).toBeLessThan(1e-4 * a.gradNorm + 1e-7);
      expect(Math.abs(b.loss - a.loss)).toBeLessThan(1e-5);
      expect(b.clipFraction).toBe(a.clipFraction);
    }
    // Each AdamW step rewrote the adapter in place and said so (the runtime's KV prefix reuse relies on it).
    expect(opt).toBeGreaterThan(0);
    expect(rt.adapters.active?.version).toBe(opt);
    // Compare the total updates: Adam turns f32 noise in near-zero gradient entries into sign-sized steps,
    // so single entries may differ by ~1e-4 while the update as a whole agrees closely.
    const init = adapterTensors(initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(5)));
    const want = adapterTensors(cpu.currentAdapter);
    const got = adapterTensors((await gpu.exportState()).adapter);
    got.forEach((t, i) => {
      const d = (x: Float32Array) => x.map((v, j) => v - init[i].data[j]);
      expect(relL2(d(t.data), d(want[i].data)), t.name).toBeLessThan(1e-2);
    });
    expect(want.some((t) => t.which === 'B' && t.data.some((v) => Math.abs(v) > 1e-3))).toBe(true);
    gpu.destroy();
    rt.destroy();
  });

  it('the trust region on the GPU scales an update back as the float64 CPU backend does; importAdapter sets the weights the runtime reads, keeps the moments, marks the KV prefix stale, and refuses a wrong shape whole', async () => {
    const base = { learningRate: 0.05, groupSize: 4, queriesPerStep: 3, beta: 0, microBatchTokens: 40 };
    const fresh = () => new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(6)));
    const played = await playToyRollouts(task, cpuTokenPolicy(fresh()), [0, 1, 2], 4, 1, new Rng(7), 'tr');
    // Rewards that differ within each group, so the step updates whatever the rollouts scored.
    const ids = [...new Set(played.samples.map((x) => x.rolloutId))];
    const samples = played.samples.map((x) => ({ ...x, reward: ids.indexOf(x.rolloutId) % 2 }));
    const ctx = () => ({ step: 1, optimizerSteps: 0, random: () => 0.5 });
    // The whole update's KL, measured and never bound; then a tenth of it as the bound.
    const full = (await grpoStep(fresh(), samples, resolveGrpoConfig({ ...base, maxUpdateKl: 1e9 }), ctx())).trustRegion!.kl;
    expect(full).toBeGreaterThan(1e-6);
    const cfg = resolveGrpoConfig({ ...base, maxUpdateKl: full / 10 });
    const cpu = fresh();
    const a = (await grpoStep(cpu, samples, cfg, ctx())).trustRegion!;
    const { rt, backend: gpu } = await gpuBackend(6);
    const b = (await grpoStep(gpu, samples, cfg, ctx())).trustRegion!;
    expect(a.scale).toBeLessThan(1);
    expect(Math.abs(b.scale - a.scale)).toBeLessThan(1e-3 * a.scale);
    expect(b.kl).toBeLessThanOrEqual(full / 10);
    expect(Math.abs(b.kl - a.kl)).toBeLessThan(1e-2 * a.kl);
    const want = adapterTensors(cpu.currentAdapter);
    adapterTensors(await gpu.exportAdapter()).forEach((t, i) => expect(relL2(t.data, want[i].data), t.name).toBeLessThan(1e-3));

    // importAdapter alone: new weights, the same moments, one more version, and the runtime computes with them.
    const state = await gpu.exportState();
    const target = await gpu.exportAdapter();
    for (const t of adapterTensors(target)) t.data.forEach((v, i) => (t.data[i] = v + 0.02 * Math.cos(i + t.data.length)));
    const version = rt.adapters.active!.version;
    await gpu.importAdapter(target);
    expect(rt.adapters.active!.version).toBe(version + 1);
    const now = await gpu.exportState();
    expect(adapterTensors(now.adapter).map((t) => Array.from(t.data))).toEqual(adapterTensors(target).map((t) => Array.from(t.data)));
    expect([...now.moments.values()]).toEqual([...state.moments.values()]);
    const ref = new CpuPolicyBackend(model.config, model.weights, target);
    const packed = packBatch(samples, samples.map((_, i) => i), model.config.vocabSize);
    const [lg, lc] = [await gpu.logprobs(packed, true), await ref.logprobs(packed, true)];
    for (const r of packed.lossRows) expect(Math.abs(lg[r] - lc[r])).toBeLessThan(1e-3);
    const bad = await gpu.exportAdapter();
    const pairs = [...bad.pairs.values()];
    for (const t of adapterTensors(bad)) t.data.fill(7);
    pairs[pairs.length - 1].B = new Float32Array(3);
    await expect(gpu.importAdapter(bad)).rejects.toThrow(/importAdapter: tensor '.*lora_B.*' is missing or has another shape than the trained adapter/);
    expect(adapterTensors(await gpu.exportAdapter()).map((t) => Array.from(t.data))).toEqual(adapterTensors(target).map((t) => Array.from(t.data)));
    expect(rt.adapters.active!.version).toBe(version + 1);
    gpu.destroy();
    rt.destroy();
  });

  it('a checkpoint exported from the GPU and imported into a fresh backend reproduces the next step', async () => {
    // The path a run takes: a training host on the runtime saves the checkpoint, and a fresh runtime and host
    // resume the run from it.
    const storage = memoryTrainStorage();
    const config = { learningRate: 0.01, groupSize: 4, queriesPerStep: 3, seed: 9, microBatchTokens: 256 };
    const make = async () => {
      const rt = await Qwen2Runtime.create(await gpuFor('native'), model.config, model.source, { maxContext: 16, maxBatchRows: 256 });
      return { rt, host: new TrainingHost(() => runtimePolicyHost(rt, 'toy'), async () => storage) };
    };
    // A step's rollouts come from the policy as it is, with a sampling stream fixed by the step.
    const step = async (host: TrainingHost) => {
      const done = host.trainInfo()!.step;
      const backend = host.current!.backend as GpuPolicyBackend;
      const { samples } = await playToyRollouts(task, gpuTokenPolicy(backend), [0, 1, 2], config.groupSize, 1, new Rng(100 + done), `s${done + 1}`);
      return host.trainStep(samples);
    };
    const a = await make();
    await a.host.trainStart({ runId: 'gpu-run', adapter: { rank: 4, alpha: 8 }, config });
    await step(a.host);
    await step(a.host);
    await a.host.trainCheckpoint();
    const s3 = await step(a.host);
    const want = adapterTensors((await a.host.current!.backend.exportState()).adapter);
    a.host.trainStop();
    a.rt.destroy();
    const b = await make();
    expect(await b.host.trainStart({ runId: 'gpu-run', adapter: { rank: 4, alpha: 8 }, resume: true })).toMatchObject({ step: 2, resumed: true });
    const again = await step(b.host);
    expect(again.rewardMean).toBe(s3.rewardMean);
    expect(again.gradNorm).toBeCloseTo(s3.gradNorm, 6);
    const got = adapterTensors((await b.host.current!.backend.exportState()).adapter);
    got.forEach((t, i) => {
      for (let j = 0; j < t.data.length; j++) expect(Math.abs(t.data[j] - want[i].data[j]), t.name).toBeLessThan(1e-6);
    });
    b.host.trainStop();
    b.rt.destroy();
  });

  it('a NaN or infinity before AdamW skips the update on the GPU: the adapter, moments and version are unchanged', async () => {
    const cfg = resolveGrpoConfig({ learningRate: 0.01, groupSize: 4, queriesPerStep: 2, microBatchTokens: 256 });
    const { rt, backend } = await gpuBackend(3);
    const played = await playToyRollouts(task, gpuTokenPolicy(backend), [0, 1], 4, 1, new Rng(4), 'nan');
    // Rewards that differ within each group, whatever the rollouts scored: a step without signal takes no
    // optimizer step at all, and this test is about a step that would.
    const rolloutIds = [...new Set(played.samples.map((x) => x.rolloutId))];
    const samples = played.samples.map((x) => ({ ...x, reward: rolloutIds.indexOf(x.rolloutId) % 2 }));
    // A recorded old logprob of -Infinity: rho is infinite, so every token of that turn has a non-finite loss.
    const poisoned = samples.map((s, i) => (i === 0 ? { ...s, oldLogprobs: s.oldLogprobs?.map(() => -Infinity) ?? s.responseTokens.map(() => -Infinity) } : s));
    const before = await backend.exportState();
    const version = rt.adapters.active?.version;
    const st = await grpoStep(backend, poisoned, cfg, { step: 1, optimizerSteps: 0, random: Math.random });
    expect(st.skipped).toBe('non-finite loss');
    // The NaN gradients read back as a NaN norm, not as 0 (the reduce kernel's max(total, 0) may drop a NaN).
    expect(Number.isFinite(st.gradNorm)).toBe(false);
    expect(st.optimizerSteps).toBe(0);
    expect(rt.adapters.active?.version).toBe(version);
    const after = await backend.exportState();
    expect(adapterTensors(after.adapter)).toEqual(adapterTensors(before.adapter));
    expect([...after.moments.values()]).toEqual([...before.moments.values()]);
    // The backend trains on: the next clean step updates.
    const clean = await grpoStep(backend, samples, cfg, { step: 2, optimizerSteps: 0, random: Math.random });
    expect(clean.skipped).toBeUndefined();
    expect(clean.optimizerSteps).toBe(1);
    backend.destroy();
    rt.destroy();
  });
});

