// What AgentTrainingDriver asks the planner worker for when a run starts from a stored adapter, and what the
// run record keeps; the worker side (TrainingHost loading the stored adapter) runs for real in
// agent-training-driver.node.gpu.test.ts.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { ScriptedEngine } from '../agent/scripted-engine';
import { openAgentDb } from '../store/db';
import { resolveGrpoConfig } from '../trainer/config';
import type { TrainSessionInfo } from '../trainer/worker-trainer';
import { AgentTrainingDriver, type PlannerTrainer } from './agent-training-driver';
import type { TrainingSettings } from './training-driver';

/** Records trainStart's arguments and answers like a session that has not stepped yet. */
function recordingTrainer(): PlannerTrainer & { starts: Array<Parameters<PlannerTrainer['trainStart']>[0]> } {
  const starts: Array<Parameters<PlannerTrainer['trainStart']>[0]> = [];
  return {
    starts,
    async trainStart(o) {
      starts.push(structuredClone(o));
      const info: TrainSessionInfo = { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}) };
      return info;
    },
    trainStep: () => Promise.reject(new Error('not stepped in this test')),
    trainCheckpoint: () => Promise.reject(new Error('not checkpointed in this test')),
    trainStop: () => undefined,
  };
}

const settings: TrainingSettings = { dataset: 'agent', reward: 'benchmark', groupSize: 2, steps: 3, learningRate: 2e-5, rank: 4, targets: ['q', 'v'] };
const benchmark = { name: 'mini', kind: 'exact' as const, items: [{ pid: '1', query: 'What is 2+2?', answer: '4' }] };

describe('AgentTrainingDriver from a stored adapter', () => {
  it('asks the worker for the stored adapter, names it in the label and the run record, and resumes from it before any checkpoint', async () => {
    const dbName = `agent-start-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const start = { id: 'run-a@step-10', name: 'run-a step 10' };
    const d = await AgentTrainingDriver.create({ ...settings, startAdapter: start }, benchmark, { trainer, engines, tools: [], dbName });
    expect(trainer.starts).toHaveLength(1);
    expect(trainer.starts[0]).toMatchObject({ runId: d.runId, adapter: { adapterId: start.id }, config: { learningRate: 2e-5 } });
    expect(d.label).toBe('Planner on agent rollouts of “mini” (planner:test), from adapter “run-a step 10”');
    const db = await openAgentDb(dbName);
    const rec = await db.get('trainingRuns', d.runId);
    expect((rec?.config as { settings: TrainingSettings }).settings.startAdapter).toEqual(start);

    // A reload before the first checkpoint: the run starts over from the same stored adapter.
    await AgentTrainingDriver.resume(d.runId, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[1]).toMatchObject({ runId: d.runId, adapter: { adapterId: start.id }, resume: true });
    // After a checkpoint, the checkpoint's adapter wins, so the start adapter is not needed (it may be deleted).
    await db.put('checkpoints', { id: `${d.runId}#1`, runId: d.runId, step: 1, createdAt: 1, adapterId: `${d.runId}@step-1`, moments: {}, rngState: 0 });
    await AgentTrainingDriver.resume(d.runId, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[2]).toMatchObject({ runId: d.runId, adapter: { rank: 4, alpha: 8, targets: ['q', 'v'] }, resume: true });
  });

  it('starts a fresh adapter from the form’s rank and targets when no stored adapter is chosen', async () => {
    const dbName = `agent-fresh-${Math.random()}`;
    const engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    const trainer = recordingTrainer();
    const d = await AgentTrainingDriver.create(settings, benchmark, { trainer, engines, tools: [], dbName });
    expect(trainer.starts[0].adapter).toEqual({ rank: 4, alpha: 8, targets: ['q', 'v'] });
    expect(d.label).toBe('Planner on agent rollouts of “mini” (planner:test)');
    const rec = await (await openAgentDb(dbName)).get('trainingRuns', d.runId);
    expect((rec?.config as { settings: TrainingSettings }).settings.startAdapter).toBeNull();
  });
});
