// The training session the planner worker hosts, on the qwen2-tiny fixture, fed by real agent rollouts: the
// planner (our runtime, byte tokenizer) samples each planner turn with the session's adapter, a scripted
// generator answers right in one rollout and wrong in the other so the group has mixed rewards, and the
// step is checked against the float64 CPU backend on the same samples. Then the adapter is live for the
// next rollouts (on-policy) and a checkpoint in (fake) IndexedDB resumes to the same state.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../tests/support/gpu';
import { multiplyTool } from '../../tests/support/test-tools';
import { tinyPlanner } from '../../tests/support/tiny-agent';
import { maxAbsDiff, relL2 } from '../../tests/support/compare';
import { readFixtureWeights } from '../../tests/support/qwen2-fixture';
import { ScriptedEngine } from '../agent/scripted-engine';
import { openAgentDb } from '../store/db';
import { Rng } from '../util/rng';
import { idbTrainStorage } from './checkpoint-idb';
import type { GpuPolicyBackend } from './gpu-backend';
import { AgentCollector } from './run/agent-collector';
import { rolloutAgentConfig } from './run/agent-run';
import { idbRolloutStorage } from './run/run-store-idb';
import { stepBatch } from './run/rollout-samples';
import { runtimePolicyHost } from './runtime-policy-host';
import { CpuPolicyBackend } from './cpu-backend';
import { grpoStep } from './grpo-step';
import { adapterTensors, initLoraAdapter, peftName } from './lora-init';
import { TrainingHost } from './training-host';

describe('worker training session on agent rollouts (qwen2-tiny)', () => {
  it('trains on a mixed-reward group like the CPU reference, samples on-policy, and resumes from its checkpoint', async () => {
    const ctx = await gpuFor('packed');
    const { rt, planner } = await tinyPlanner(ctx);
    const shared = new ScriptedEngine({ analysis: ['Multiply.'], executor: ['{"args": {"a": 2, "b": 3}}'], verifier: ['{"verdict": "STOP"}'], generator: ['<answer>6</answer>', '<answer>7</answer>'] }, 'shared:test');
    const dbName = `worker-trainer-${Math.random()}`;
    const storage = await idbTrainStorage(dbName);
    const store = storage.checkpoints;
    const host = runtimePolicyHost(rt, 'qwen2-tiny');
    const runId = 'agent-run';
    const config = { groupSize: 2, queriesPerStep: 1, learningRate: 0.05, microBatchTokens: 1536, maxTurns: 1, beta: 0.04, checkpointEvery: 0, seed: 7 };
    const session = new TrainingHost(() => host, async () => storage);
    const started = await session.trainStart({ runId, adapter: { rank: 2, alpha: 4, targets: ['q', 'v', 'down'] }, config });
    const adapterId = started.adapterId;
    const backend = () => session.current!.backend;
    expect(rt.activeAdapterId).toBe(adapterId);
    const before = await backend().exportState();
    for (const t of adapterTensors(before.adapter)) if (t.which === 'B') expect(maxAbsDiff(t.data, new Float32Array(t.data.length))).toBe(0);

    const groupId = `${runId}:step1:item0`;
    // Free replies: in 6 tokens a reply schema would force nearly every token (jump-forward), and forced
    // tokens are no loss rows, so the step would have nothing to compare with the CPU reference.
    const budget = { maxTurns: 1, plannerTokens: 6, moduleTokens: 32, queriesPerStep: 1, microBatchTokens: 1536, constrainReplies: false };
    const collector = new AgentCollector({
      runId,
      items: [{ query: 'What is 2 times 3?', answer: '6' }],
      reward: { kind: 'exact' },
      agent: (seed) => rolloutAgentConfig(budget, 1, seed),
      engines: { planner, shared },
      tools: [multiplyTool],
      concurrency: 1,
      storage: idbRolloutStorage(dbName),
    });
    const groups = await collector.collect([{ step: 1, item: 0, groupId, rollouts: [{ id: `${groupId}:r0`, seed: 11 }, { id: `${groupId}:r1`, seed: 12 }] }], {});
    const g = stepBatch({ runId, step: 1, groups, advantageEps: 1e-6 });
    expect(g.rewards).toEqual([1, 0]);
    expect(g.samples.length).toBeGreaterThanOrEqual(2);
    expect(new Set(g.samples.map((s) => s.reward))).toEqual(new Set([0, 1]));
    // Every planner turn was sampled by the adapter being trained.
    expect(g.records.map((r) => r.adapterId)).toEqual(g.records.map(() => adapterId));
    for (const s of g.samples) expect(s.oldLogprobs!.length).toBe(s.responseTokens.length);

    // The float64 CPU backend from the same initial adapter on the same samples.
    const { weights } = readFixtureWeights();
    const cpuAdapter = initLoraAdapter(rt.config, { r: 2, alpha: 4, modules: ['q', 'v', 'down'] }, new Rng(config.seed + 4));
    expect(maxAbsDiff(adapterTensors(cpuAdapter)[0].data, adapterTensors(before.adapter)[0].data)).toBe(0);
    const cpu = new CpuPolicyBackend(rt.config, weights, cpuAdapter);
    const rng = new Rng(config.seed);
    const ref = await grpoStep(cpu, g.samples, started.config, { step: 1, optimizerSteps: 0, random: () => rng.next() });

    const stats = await session.trainStep(g.samples);
    expect(stats.step).toBe(1);
    expect(stats.noGradientGroups).toBe(0);
    for (const v of [stats.loss, stats.kl, stats.gradNorm, stats.clipFraction, stats.rewardMean, stats.tokensPerSecond]) expect(Number.isFinite(v)).toBe(true);
    expect(stats.rewardMean).toBe(0.5);
    expect(stats.gradNorm).toBeGreaterThan(0);
    expect(Math.abs(stats.gradNorm - ref.gradNorm)).toBeLessThan(2e-2 * ref.gradNorm);
    expect(Math.abs(stats.loss - ref.loss)).toBeLessThan(2e-2 * Math.abs(ref.loss) + 1e-4);
    const gpuGrads = await (backend() as GpuPolicyBackend).readGradients();
    for (const [key, grad] of cpu.gradients) {
      const [layer, module] = key.split('.');
      const name = peftName({ layer: Number(layer), module: module as 'q' }, 'B');
      expect(relL2(gpuGrads.get(name)!, grad.B)).toBeLessThan(3e-2);
    }
    const after = await backend().exportState();
    let moved = 0;
    for (const t of adapterTensors(after.adapter)) if (t.which === 'B') moved += maxAbsDiff(t.data, new Float32Array(t.data.length));
    expect(moved).toBeGreaterThan(0);

    // On-policy: the runtime's active adapter is the updated one, so the next rollouts see it.
    expect(rt.activeAdapterId).toBe(adapterId);
    const seq = [...g.samples[0].promptTokens, ...g.samples[0].responseTokens];
    const [on] = await rt.score([seq]);
    rt.setActiveAdapter(null);
    const [off] = await rt.score([seq]);
    rt.setActiveAdapter(adapterId);
    expect(maxAbsDiff(on, off)).toBeGreaterThan(1e-4);

    // PEFT export of the live adapter carries the trained B.
    const peft = await session.exportAdapter();
    expect(peft.config.r).toBe(2);
    expect(peft.weights.byteLength).toBeGreaterThan(0);

    // Checkpoint round trip through IndexedDB, into a new session that resumes the run.
    const saved = await session.trainCheckpoint();
    expect(saved.step).toBe(1);
    const latest = await store.latest(runId);
    expect(latest!.step).toBe(1);
    expect(latest!.optimizerSteps).toBe(stats.optimizerSteps);
    session.trainStop();
    expect(rt.activeAdapterId).toBeNull();
    // (That the shuffling RNG is restored too, trainer.test's resumed runs show: they take the same next step.)
    const resumed = new TrainingHost(() => host, async () => storage);
    expect(await resumed.trainStart({ runId, adapter: { rank: 8, alpha: 16 }, resume: true })).toMatchObject({ step: 1, optimizerSteps: stats.optimizerSteps, resumed: true });
    const back = await resumed.current!.backend.exportState();
    const want = adapterTensors(after.adapter);
    const got = adapterTensors(back.adapter);
    expect(got.map((t) => t.name)).toEqual(want.map((t) => t.name));
    got.forEach((t, i) => expect(maxAbsDiff(t.data, want[i].data)).toBe(0));
    for (const [name, mv] of after.moments) {
      expect(maxAbsDiff(back.moments.get(name)!.m, mv.m)).toBe(0);
      expect(maxAbsDiff(back.moments.get(name)!.v, mv.v)).toBe(0);
    }
    resumed.trainStop();
    rt.destroy();
  });
});
