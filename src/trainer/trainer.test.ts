// The training run's checkpoints, through both stores (a directory of PEFT files, and IndexedDB on
// fake-indexeddb): a run paused after step k and resumed by a fresh host (nothing in memory) takes exactly the
// step an uninterrupted run takes (same rollouts: the schedule's seeds; same update: moments, bias-correction
// step and shuffling RNG restored); old checkpoints are pruned to the newest K plus the best; a damaged newest
// checkpoint makes resume fall back to the one before and say so.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAgentDb } from '../store/db';
import { dirTrainStorage } from './checkpoint-node';
import { idbTrainStorage } from './checkpoint-idb';
import { adapterTensors } from './lora-init';
import type { RunSpec, RunStore } from './run/run-store';
import { DirRunStore } from './run/run-store-dir';
import { IdbRunStore } from './run/run-store-idb';
import { toyRunSetup, toyRunSpec } from './run/toy-run';
import { TrainingRun } from './run/training-run';
import type { TrainStorage } from './training-host';

// Seed 12: every step of these runs has a group with signal, so each takes its optimizer steps (a step without
// signal takes none since grpoStep skips it) and resume has moments to restore.
const TASK = { numQueries: 4, hiddenSize: 16, intermediateSize: 24, numLayers: 1 };
const spec = (steps: number, extra: Partial<RunSpec> = {}): RunSpec => ({
  ...toyRunSpec({ steps, groupSize: 4, learningRate: 0.01, seed: 12, adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] }, task: TASK, grpo: { miniBatches: 2, epochs: 2, checkpointEvery: 2 } }),
  ...extra,
});

interface Place {
  store: () => RunStore;
  storage: (dbName?: string) => Promise<TrainStorage>;
}

async function setup(p: Place) {
  return toyRunSetup({ store: p.store(), storage: p.storage, backend: 'cpu', task: TASK });
}

/** Step 3 of a run paused after step 2 and resumed by a fresh host, against the same step run straight through. */
async function checkResume(paused: Place, straight: Place): Promise<void> {
  const a = await setup(paused);
  const runA = await TrainingRun.start('run-1', spec(3), a.deps);
  await runA.run({ onStep: (m) => m.step === 2 && runA.pause() });
  expect(runA.state).toBe('paused');
  expect(runA.history.map((m) => m.step)).toEqual([1, 2]);
  a.destroy();

  // A "reload": a new host, backend and store objects; only storage carries the run.
  const b = await setup(paused);
  const runB = await TrainingRun.resume('run-1', b.deps);
  expect(runB.info).toMatchObject({ step: 2, resumed: true, optimizerSteps: 2 * 2 * 2, skippedCheckpoints: [] });
  expect(runB.history.map((m) => m.step)).toEqual([1, 2]);
  await runB.run();
  b.destroy();
  const c = await setup(straight);
  const runC = await TrainingRun.start('run-1', spec(3), c.deps);
  await runC.run();
  c.destroy();
  // Each finished run's last checkpoint holds its final adapter.
  const finalAdapter = async (p: Place) => adapterTensors((await (await p.storage()).checkpoints.latest('run-1'))!.adapter);
  const resumedAdapter = await finalAdapter(paused);
  const straightAdapter = await finalAdapter(straight);

  expect(runB.state).toBe('done');
  expect(runB.history.map((m) => [m.step, m.reward, m.loss, m.gradNorm])).toEqual(runC.history.map((m) => [m.step, m.reward, m.loss, m.gradNorm]));
  expect(resumedAdapter.map((t) => t.name)).toEqual(straightAdapter.map((t) => t.name));
  resumedAdapter.forEach((t, i) => expect(Array.from(t.data), t.name).toEqual(Array.from(straightAdapter[i].data)));
  // The adapter did move during training (B starts at zero), so the equality above is not vacuous.
  expect(straightAdapter.some((t) => t.which === 'B' && t.data.some((v) => v !== 0))).toBe(true);
}

const dirPlace = (dir: string): Place => ({ store: () => new DirRunStore(dir), storage: async () => dirTrainStorage(join(dir, 'checkpoints')) });
const idbPlace = (db: string): Place => ({ store: () => new IdbRunStore(db), storage: (name) => idbTrainStorage(name ?? db) });

describe('training run checkpoints', () => {
  it('disk: PEFT files + optimizer moments + trainer state; a resumed run takes the same next step', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'grpo-ckpt-'));
    await checkResume(dirPlace(dir), dirPlace(await mkdtemp(join(tmpdir(), 'grpo-ckpt-straight-'))));
    expect((await readdir(join(dir, 'checkpoints'))).sort()).toEqual(['latest.json', 'step-000002', 'step-000003']);
    expect((await readdir(join(dir, 'checkpoints', 'step-000003'))).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'manifest.json', 'optimizer.safetensors', 'trainer_state.json']);
    const peft = JSON.parse(await readFile(join(dir, 'adapter', 'adapter_config.json'), 'utf8'));
    expect(peft.peft_type).toBe('LORA');
    expect(peft.r).toBe(2);
    const metrics = (await readFile(join(dir, 'metrics.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as { step: number });
    expect(metrics.map((m) => m.step)).toEqual([1, 2, 3]);
  }, 120_000);

  it('IndexedDB: adapter record + checkpoint record; a resumed run takes the same next step', async () => {
    const name = `ckpt-test-${Math.random()}`;
    await checkResume(idbPlace(name), idbPlace(`ckpt-test-straight-${Math.random()}`));
    const db = await openAgentDb(name);
    const recs = await db.getAllFromIndex('checkpoints', 'byRun', 'run-1');
    expect(recs.map((r) => r.step).sort()).toEqual([2, 3]);
    const ad = await db.get('adapters', recs[0].adapterId);
    expect(ad?.trainingRunId).toBe('run-1');
    expect(ad!.config.target_modules).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
    const run = await db.get('trainingRuns', 'run-1');
    expect(run?.status).toBe('done');
    expect(run?.stats.map((m) => m.step)).toEqual([1, 2, 3]);
    // Every trained-on planner turn is stored with its step, reward and advantage.
    const rollouts = await db.getAllFromIndex('rollouts', 'byRun', 'run-1');
    expect(new Set(rollouts.map((r) => r.step))).toEqual(new Set([1, 2, 3]));
    // 3 steps × 4 queries × 4 rollouts × 2 turns, plus the extra rollouts of groups with no success.
    expect(rollouts.length).toBe(run!.stats.reduce((n, m) => n + Number(m.samples), 0));
    expect(rollouts.length).toBe(3 * 4 * 4 * 2 + 2 * run!.stats.reduce((n, m) => n + Number(m.extraRollouts ?? 0), 0));
    for (const r of rollouts) expect(typeof r.advantage).toBe('number');
  }, 120_000);

  it('keeps the newest K checkpoints plus the best; a damaged newest one makes resume fall back and say so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'grpo-prune-'));
    const place = dirPlace(dir);
    const s = await setup(place);
    const run = await TrainingRun.start('run-p', spec(6, { keepCheckpoints: 2, bestWindow: 2, grpo: { ...spec(6).grpo, checkpointEvery: 1 } }), s.deps);
    await run.run();
    s.destroy();
    const steps = (await readdir(join(dir, 'checkpoints'))).filter((n) => n.startsWith('step-')).map((n) => Number(n.slice(5))).sort((a, b) => a - b);
    const best = run.result!;
    expect(best.reason).toBe('best');
    expect(steps).toEqual([...new Set([best.step, 5, 6])].sort((a, b) => a - b));
    // The published adapter is the best step's.
    expect(await readFile(join(dir, 'adapter', 'adapter_model.safetensors'))).toEqual(await readFile(join(best.adapterId, 'adapter_model.safetensors')));

    // Step 6's adapter is damaged: resume takes step 5 and says why.
    await writeFile(join(dir, 'checkpoints', 'step-000006', 'adapter_model.safetensors'), 'not a safetensors file');
    const again = await setup(place);
    const resumed = await TrainingRun.resume('run-p', again.deps);
    expect(resumed.info.step).toBe(5);
    expect(resumed.notes.join(' ')).toMatch(/resumed from the checkpoint of step 5: newer ones could not be read \(.*step-000006.*adapter_model\.safetensors/);
    expect(resumed.history.map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
    again.destroy();
    await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('IndexedDB pruning keeps an adapter the user saved by name, and resume skips a checkpoint whose adapter was deleted', async () => {
    const name = `ckpt-prune-${Math.random()}`;
    const place = idbPlace(name);
    const s = await setup(place);
    const db = await openAgentDb(name);
    const run = await TrainingRun.start('run-q', spec(4, { keepCheckpoints: 1, bestWindow: 10, grpo: { ...spec(4).grpo, checkpointEvery: 1 } }), s.deps);
    await run.run({
      onCheckpoint: async (c) => {
        // The user keeps step 1's adapter under a name of their own.
        if (c.step === 1) await db.put('adapters', { ...(await db.get('adapters', c.adapterId))!, name: 'my step 1', keep: true });
      },
    });
    s.destroy();
    expect((await db.getAllFromIndex('checkpoints', 'byRun', 'run-q')).map((r) => r.step)).toEqual([4]);
    expect((await db.getAll('adapters')).map((a) => a.name).sort()).toEqual(['my step 1', 'run-q step 4']);
    // A run shorter than the window is judged over all its steps: only the last fills it.
    expect(run.result).toMatchObject({ step: 4, reason: 'best' });

    // Deleting the newest checkpoint's adapter: resume has nothing intact and says so, naming the adapter.
    await db.delete('adapters', 'run-q@step-4');
    const again = await setup(place);
    await expect(TrainingRun.resume('run-q', again.deps)).rejects.toThrow(/run 'run-q' has 1 checkpoint\(s\) and none can be read: step 4: checkpoint 'run-q#4' refers to adapter 'run-q@step-4', which is missing/);
    again.destroy();
  }, 120_000);

  it('a checkpoint of another run is refused', async () => {
    const place = dirPlace(await mkdtemp(join(tmpdir(), 'grpo-other-')));
    const s = await setup(place);
    await s.host.trainStart({ runId: 'run-1', adapter: { rank: 2, alpha: 4 } });
    await s.host.trainCheckpoint();
    s.destroy();
    // A store that answers for run-2 with run-1's checkpoint (a mixed-up directory or database).
    const ckpt = await (await place.storage()).checkpoints.latest('run-1');
    const mixedUp: TrainStorage = { checkpoints: { save: async () => '', prune: async () => undefined, latest: async () => ckpt }, adapter: async () => { throw new Error('unused'); } };
    const other = await toyRunSetup({ store: place.store(), storage: async () => mixedUp, backend: 'cpu', task: TASK });
    await expect(other.host.trainStart({ runId: 'run-2', adapter: { rank: 2, alpha: 4 }, resume: true })).rejects.toThrow(/belongs to run 'run-1', not 'run-2'/);
    other.destroy();
  });
});
