// The Training tab's agent driver end to end in Node: the qwen2-tiny planner (our runtime, byte tokenizer) plays the
// rollouts, the worker's TrainingHost (run in-process here) trains on them, the run pauses after a step,
// and a driver made after a "reload" (new host, nothing in memory) resumes it from the run record and
// the IndexedDB checkpoint to the end; a new run then starts from the stored adapter.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { gpuFor } from '../../../tests/support/gpu';
import { multiplyTool } from '../../../tests/support/test-tools';
import { tinyPlanner } from '../../../tests/support/tiny-agent';
import { maxAbsDiff } from '../../../tests/support/compare';
import { ScriptedEngine } from '../../agent/scripted-engine';
import { readSafetensors } from '../../io/safetensors';
import { openAgentDb } from '../../store/db';
import { idbTrainStorage } from '../../trainer/checkpoint-idb';
import { runtimePolicyHost } from '../../trainer/runtime-policy-host';
import { TrainingHost } from '../../trainer/training-host';
import { createAgentDriver, resumableAgentRuns, resumeAgentDriver } from './agent-training-driver';
import type { TrainingStepPoint } from './training-driver';

describe('the agent training driver on the real planner (qwen2-tiny)', () => {
  it('trains a step, pauses with a checkpoint, resumes after a reload to the end, and starts a new run from the stored adapter', async () => {
    const ctx = await gpuFor('packed');
    const { rt, planner } = await tinyPlanner(ctx);
    // The runtime calls the planner's generations became: requests per generateBatch, 1 for a lone generate.
    const runtimeCalls: number[] = [];
    const batch = rt.generateBatch.bind(rt);
    const one = rt.generate.bind(rt);
    rt.generateBatch = (reqs) => (runtimeCalls.push(reqs.length), batch(reqs));
    rt.generate = (p, o) => (runtimeCalls.push(1), one(p, o));
    // Right, wrong, right, wrong... in call order. A group's 2 rollouts run concurrently (the default
    // rolloutConcurrency is min(groupSize, 8)), so which one answers first depends on the interleaving, but each
    // group gets one right and one wrong answer: mixed rewards, whatever the random planner says.
    let answers = 0;
    const shared = new ScriptedEngine({ analysis: ['Multiply.'], executor: ['{"args": {"a": 2, "b": 3}}'], verifier: ['{"verdict": "STOP"}'], generator: [() => (answers++ % 2 ? '<answer>7</answer>' : '<answer>6</answer>')] }, 'shared:test');
    const dbName = `agent-driver-${Math.random()}`;
    const engines = { planner, shared };
    const settings = { dataset: 'agent', reward: 'benchmark', groupSize: 2, steps: 2, learningRate: 0.05, rank: 2, targets: ['q' as const, 'v' as const], seed: 3 };
    const benchmark = { name: 'mult', kind: 'exact' as const, items: [{ pid: '0', query: 'What is 2 times 3?', answer: '6' }, { pid: '1', query: 'No answer here' , answer: undefined }] };
    // Free replies: in 4 tokens a reply schema forces every token (jump-forward), and forced tokens are no
    // loss rows, so no step would change the adapter.
    const budget = { maxTurns: 1, plannerTokens: 4, moduleTokens: 32, queriesPerStep: 1, microBatchTokens: 1536, constrainReplies: false };

    const host = new TrainingHost(() => runtimePolicyHost(rt, 'qwen2-tiny'), idbTrainStorage);
    const d = await createAgentDriver(settings, benchmark, { trainer: host, engines, tools: [multiplyTool], dbName }, budget);
    const seen: TrainingStepPoint[] = [];
    await d.run((p) => {
      seen.push(p);
      d.pause();
    });
    expect(d.state).toBe('paused');
    expect(seen.map((p) => p.step)).toEqual([1]);
    // The group's 2 rollouts reach the planner staggered; it held the first call for the second and
    // decoded both together.
    expect(runtimeCalls).toEqual([2]);
    // Both rollouts analyse the same query greedily: the engine was asked once.
    expect(shared.count('analysis')).toBe(1);
    expect(seen[0].reward).toBe(0.5);
    for (const v of Object.values(seen[0])) expect(Number.isFinite(v)).toBe(true);
    const db = await openAgentDb(dbName);
    const rec = await db.get('trainingRuns', d.runId);
    expect(rec).toMatchObject({ status: 'paused', stats: [{ step: 1, reward: 0.5 }] });
    // The rollouts it trained on are stored with their reward and advantage (mixed group: ±0.707).
    const trained = await db.getAllFromIndex('rollouts', 'byRun', d.runId);
    expect(trained.length).toBeGreaterThanOrEqual(2);
    for (const r of trained) expect(Math.abs(r.advantage!)).toBeGreaterThan(0.5);
    expect((await resumableAgentRuns(dbName)).map((r) => r.id)).toEqual([d.runId]);
    const step1 = await db.get('adapters', `${d.runId}@step-1`);
    expect(step1?.baseModel).toBe('qwen2-tiny');
    const bNames = Object.keys(step1!.tensors).filter((n) => n.endsWith('lora_B.weight'));
    expect(bNames.length).toBe(4);
    expect(bNames.some((n) => maxAbsDiff(step1!.tensors[n].data, new Float32Array(step1!.tensors[n].data.length)) > 0)).toBe(true);
    const live = await host.exportAdapter();

    // "Reload": the worker's session is gone; a new host and driver continue from storage.
    host.trainStop();
    expect(rt.activeAdapterId).toBeNull();
    const host2 = new TrainingHost(() => runtimePolicyHost(rt, 'qwen2-tiny'), idbTrainStorage);
    const d2 = await resumeAgentDriver(d.runId, { trainer: host2, engines, tools: [multiplyTool], dbName });
    expect(d2.trainingRun.info).toMatchObject({ step: 1, resumed: true });
    expect(d2.state).toBe('paused');
    expect(d2.history).toEqual(seen);
    const restored = await host2.exportAdapter();
    expect(maxAbsDiff(restored.weights, live.weights)).toBe(0);
    await d2.run((p) => seen.push(p));
    expect(d2.state).toBe('done');
    expect(seen.map((p) => p.step)).toEqual([1, 2]);
    expect(seen[1].reward).toBe(0.5);
    expect(await db.get('trainingRuns', d.runId)).toMatchObject({ status: 'done', stats: [{ step: 1 }, { step: 2 }] });
    expect(await db.get('adapters', `${d.runId}@step-2`)).toBeTruthy();
    // Done: the training copy of the adapter is gone from the runtime, the stored one stays.
    expect(rt.adapters.ids()).not.toContain(`training:${d.runId}`);
    expect(await resumableAgentRuns(dbName)).toEqual([]);

    // A new run from the stored step-2 adapter: the worker's session starts from exactly its tensors.
    const step2 = (await db.get('adapters', `${d.runId}@step-2`))!;
    const host3 = new TrainingHost(() => runtimePolicyHost(rt, 'qwen2-tiny'), idbTrainStorage);
    const d3 = await createAgentDriver({ ...settings, startAdapter: { id: step2.id, name: step2.name } }, benchmark, { trainer: host3, engines, tools: [multiplyTool], dbName }, budget);
    expect(rt.activeAdapterId).toBe(`training:${d3.runId}`);
    const started = readSafetensors((await host3.exportAdapter()).weights, 'exported');
    expect(started.names().sort()).toEqual(Object.keys(step2.tensors).sort());
    for (const name of started.names()) expect(maxAbsDiff(started.f32(name), step2.tensors[name].data), name).toBe(0);
    expect((await db.get('trainingRuns', d3.runId))?.config).toMatchObject({ spec: { adapter: { kind: 'stored', id: step2.id, name: step2.name } } });
    host3.trainStop();
    rt.destroy();
  });
});
