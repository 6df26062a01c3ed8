import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { adapterFiles, adapterShape, listAdapters } from './adapter-store';
import { createToyDriver, type TrainingSettings } from './training-driver';
import { idbTrainStorage } from '../../trainer/checkpoint-idb';
import { maxAbsDiff } from '../../../tests/support/compare';
import { openAgentDb } from '../../store/db';
import { parseAdapter } from '../../io/peft';

describe('the toy training driver', () => {
  it('pauses after a step, resumes to the end, stores the run and a PEFT adapter that parses back', async () => {
    const db = `toy-driver-${Math.random()}`;
    const d = await createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 4, steps: 3, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, db);
    const seen: number[] = [];
    const first = d.run((p) => {
      seen.push(p.step);
      if (p.step === 1) d.pause();
    });
    await first;
    expect(d.state).toBe('paused');
    expect(seen).toEqual([1]);
    await d.run((p) => seen.push(p.step));
    expect(d.state).toBe('done');
    expect(seen).toEqual([1, 2, 3]);
    for (const p of d.history) {
      expect(p.reward).toBeGreaterThanOrEqual(0);
      expect(p.reward).toBeLessThanOrEqual(1);
      expect(Number.isFinite(p.loss)).toBe(true);
    }
    const run = await (await openAgentDb(db)).get('trainingRuns', d.runId);
    expect(run?.status).toBe('done');
    expect(run?.stats.length).toBe(3);
    const adapters = await listAdapters(db);
    expect(adapters[0].id).toBe(`${d.runId}@step-3`);
    // Two layers × (q, v) × (A, B).
    expect(Object.keys(adapters[0].tensors).length).toBe(8);
    const files = adapterFiles(adapters[0]);
    const back = parseAdapter(JSON.parse(files.config), files.weights);
    expect(back.pairs.size).toBe(4);
    expect(back.config.r).toBe(2);
    const resumed = await (await idbTrainStorage(db)).checkpoints.latest(d.runId);
    expect(resumed?.step).toBe(3);
  });

  it('starts a run from a stored adapter: its tensors are the start, its name is in the run record', async () => {
    const db = `toy-driver-start-${Math.random()}`;
    const base: TrainingSettings = { dataset: 'toy', reward: 'toy', groupSize: 4, steps: 2, learningRate: 0.02, rank: 2, targets: ['q', 'v'] };
    const first = await createToyDriver(base, db);
    await first.run(() => undefined);
    const start = (await (await openAgentDb(db)).get('adapters', `${first.runId}@step-2`))!;
    // Trained B is non-zero, so a fresh adapter (B = 0) could not pass for it below.
    const bNames = Object.keys(start.tensors).filter((n) => n.endsWith('lora_B.weight'));
    expect(Math.max(...bNames.map((n) => maxAbsDiff(start.tensors[n].data, new Float32Array(start.tensors[n].data.length))))).toBeGreaterThan(1e-3);

    // The form's rank and targets are for fresh adapters; the stored one brings its own.
    const lr = 1e-6;
    const d = await createToyDriver({ ...base, steps: 1, learningRate: lr, rank: 7, targets: [], startAdapter: { id: start.id, name: start.name } }, db);
    expect(d.label).toBe(`Toy task (tiny planner, CPU), from adapter “${start.name}”`);
    await d.run(() => undefined);
    expect(d.state).toBe('done');
    const after = (await (await openAgentDb(db)).get('adapters', `${d.runId}@step-1`))!;
    expect(Object.keys(after.tensors).sort()).toEqual(Object.keys(start.tensors).sort());
    expect(adapterShape(after)).toEqual({ rank: 2, targets: ['q', 'v'] });
    // AdamW's first step moves each weight by at most lr (|m̂ / sqrt(v̂)| = 1, no weight decay in the toy task),
    // so the step-1 adapter lies within lr of the adapter the run started from.
    for (const [name, t] of Object.entries(after.tensors)) expect(maxAbsDiff(t.data, start.tensors[name].data), name).toBeLessThanOrEqual(lr * 1.01);
    const run = await (await openAgentDb(db)).get('trainingRuns', d.runId);
    expect(run?.config).toMatchObject({ spec: { adapter: { kind: 'stored', id: start.id, name: start.name } } });
    const fresh = await (await openAgentDb(db)).get('trainingRuns', first.runId);
    expect(fresh?.config).toMatchObject({ spec: { adapter: { kind: 'fresh', rank: 2, targets: ['q', 'v'] } } });
  });

  it('refuses a start adapter that is missing or made for another base, naming it', async () => {
    const db = `toy-driver-bad-start-${Math.random()}`;
    const s: TrainingSettings = { dataset: 'toy', reward: 'toy', groupSize: 4, steps: 1, learningRate: 0.02, rank: 2, targets: ['q'] };
    await expect(createToyDriver({ ...s, startAdapter: { id: 'gone', name: 'gone' } }, db)).rejects.toThrow("adapter 'gone' is not in this browser's storage");
    const r = 2;
    await (await openAgentDb(db)).put('adapters', {
      id: 'other-base',
      name: 'made for another model',
      createdAt: 1,
      baseModel: 'agentflow-toy',
      config: { peft_type: 'LORA', r, lora_alpha: 4, target_modules: ['q_proj'] },
      tensors: {
        'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { shape: [r, 5], data: new Float32Array(r * 5) },
        'base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight': { shape: [5, r], data: new Float32Array(5 * r) },
      },
    });
    await expect(createToyDriver({ ...s, startAdapter: { id: 'other-base', name: 'made for another model' } }, db)).rejects.toThrow(
      /^adapter “made for another model” tensors: 'base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight' has shape \[2, 5\] but the base model needs \[2, \d+\]/,
    );
  });

  it('refuses an adapter without target modules', async () => {
    await expect(createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 4, steps: 3, learningRate: 0.02, rank: 2, targets: [] })).rejects.toThrow(/at least one target module/);
  });
});
