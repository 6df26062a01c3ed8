// The training loop's checkpoints: saving at step k and resuming in a fresh trainer (fresh backend, other
// initial adapter) reproduces step k+1 exactly — same rollouts (RNG state), same AdamW update (moments and
// bias-correction step) — through both stores: a directory of PEFT files, and IndexedDB (fake-indexeddb).
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAgentDb } from '../store/db';
import { Rng } from '../util/rng';
import type { CheckpointStore } from './checkpoint';
import { DiskCheckpointStore } from './checkpoint-node';
import { IdbCheckpointStore } from './checkpoint-idb';
import { resolveGrpoConfig } from './config';
import { CpuPolicyBackend, cpuTokenPolicy } from './cpu-backend';
import { adapterTensors, initLoraAdapter } from './lora';
import { ToyRolloutSource, ToyTask, toyModel } from './toy-task';
import { GrpoTrainer } from './trainer';

const task = new ToyTask({ numQueries: 4 });
const model = toyModel(task, { seed: 5, hiddenSize: 16, intermediateSize: 24, numLayers: 1 });
const cfg = resolveGrpoConfig({ learningRate: 0.01, groupSize: 4, queriesPerStep: 2, checkpointEvery: 2, seed: 11, miniBatches: 2, epochs: 2 });

function makeTrainer(store: CheckpointStore, initSeed: number): { trainer: GrpoTrainer; backend: CpuPolicyBackend } {
  const backend = new CpuPolicyBackend(model.config, model.weights, initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(initSeed)));
  const trainer = new GrpoTrainer(backend, cfg, new ToyRolloutSource(task, cpuTokenPolicy(backend), cfg), { runId: 'run-1', store });
  return { trainer, backend };
}

async function checkResume(store: CheckpointStore): Promise<void> {
  const a = makeTrainer(store, 1);
  await a.trainer.run(2); // checkpoint after step 2
  const step3 = await a.trainer.trainStep();
  const want = adapterTensors(a.backend.currentAdapter);

  const b = makeTrainer(store, 999);
  expect(await b.trainer.resume()).toBe(true);
  expect(b.trainer.step).toBe(2);
  expect(b.trainer.optimizerSteps).toBe(2 * cfg.epochs * cfg.miniBatches);
  const again = await b.trainer.trainStep();
  expect(again.step).toBe(3);
  expect(again.rewardMean).toBe(step3.rewardMean);
  expect(again.loss).toBe(step3.loss);
  expect(again.gradNorm).toBe(step3.gradNorm);
  const got = adapterTensors(b.backend.currentAdapter);
  expect(got.map((t) => t.name)).toEqual(want.map((t) => t.name));
  got.forEach((t, i) => expect(Array.from(t.data), t.name).toEqual(Array.from(want[i].data)));
  // The adapter did move during training (B starts at zero), so the equality above is not vacuous.
  expect(want.some((t) => t.which === 'B' && t.data.some((v) => v !== 0))).toBe(true);
}

describe('training checkpoints', () => {
  it('disk store: PEFT files + optimizer moments + trainer state; resume reproduces the next step', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'grpo-ckpt-'));
    await checkResume(new DiskCheckpointStore(dir));
    expect((await readdir(dir)).sort()).toEqual(['latest.json', 'step-000002']);
    const files = (await readdir(join(dir, 'step-000002'))).sort();
    expect(files).toEqual(['adapter_config.json', 'adapter_model.safetensors', 'optimizer.safetensors', 'trainer_state.json']);
    const peft = JSON.parse(await readFile(join(dir, 'step-000002', 'adapter_config.json'), 'utf8'));
    expect(peft.peft_type).toBe('LORA');
    expect(peft.r).toBe(2);
  }, 120_000);

  it('IndexedDB store: adapter record + checkpoint record; resume reproduces the next step', async () => {
    const db = await openAgentDb(`ckpt-test-${Date.now()}`);
    await checkResume(new IdbCheckpointStore(db));
    const recs = await db.getAllFromIndex('checkpoints', 'byRun', 'run-1');
    expect(recs.map((r) => r.step)).toEqual([2]);
    const ad = await db.get('adapters', recs[0].adapterId);
    expect(ad?.trainingRunId).toBe('run-1');
    expect(Object.keys(ad!.tensors).length).toBe(2 * 7 * model.config.numLayers);
    expect(ad!.config.target_modules).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
    expect(ad!.config.peft_type).toBe('LORA');
  }, 120_000);

  it('a run without checkpoints resumes nothing, and a checkpoint of another run is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'grpo-ckpt-'));
    const { trainer } = makeTrainer(new DiskCheckpointStore(dir), 1);
    expect(await trainer.resume()).toBe(false);
    const c = await trainer.checkpoint();
    const other = new GrpoTrainer(trainer.backend, cfg, trainer.source, { runId: 'run-2' });
    await expect(other.restore(c)).rejects.toThrow(/belongs to run 'run-1', not 'run-2'/);
  });
});
