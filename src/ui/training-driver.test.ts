import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { adapterFiles, listAdapters } from './adapter-store';
import { ToyTrainingDriver } from './training-driver';
import { openAgentDb } from '../store/db';
import { parseAdapter } from '../engine/io/peft';

describe('ToyTrainingDriver', () => {
  it('pauses after a step, resumes to the end, stores the run and a PEFT adapter that parses back', async () => {
    const db = `toy-driver-${Math.random()}`;
    const d = await ToyTrainingDriver.create({ dataset: 'toy', reward: 'toy', groupSize: 4, steps: 3, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, db);
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
    const resumed = await d.checkpoints.latest(d.runId);
    expect(resumed?.step).toBe(3);
  });

  it('refuses an adapter without target modules', async () => {
    await expect(ToyTrainingDriver.create({ dataset: 'toy', reward: 'toy', groupSize: 4, steps: 3, learningRate: 0.02, rank: 2, targets: [] })).rejects.toThrow(/at least one target module/);
  });
});
