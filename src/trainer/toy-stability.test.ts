// Training that stays learned: a seeded toy run on the CPU backend with the toy defaults, long past the point
// where it first reaches a 20-step rolling reward of 0.9. Before the defaults were fixed (group of 8), two
// queries could sit on a deterministic wrong answer whose all-zero groups give no gradient; at lr 0.02 solved
// queries flipped onto wrong answers and stayed there (README, "Toy training"). The run's result must be its
// best checkpoint by rolling reward.
import { describe, expect, it } from 'vitest';
import { memoryTrainStorage, MemoryCheckpointStore } from './checkpoint-memory';
import type { TrainStorage } from './training-host';
import { MemoryRunStore } from './run/run-store-memory';
import { toyRunSetup, toyRunSpec } from './run/toy-run';
import { TrainingRun } from './run/training-run';
import { TOY_TRAINING } from './toy-task';

const STEPS = 120;

describe('toy training stays learned (CPU backend)', () => {
  it(`once the rolling reward reaches 0.9 it stays >= 0.85 for the rest of ${STEPS} steps; the result is the best step`, async () => {
    const storage: TrainStorage = memoryTrainStorage();
    const setup = await toyRunSetup({ store: new MemoryRunStore(), storage: async () => storage, backend: 'cpu' });
    const spec = toyRunSpec({ steps: STEPS, groupSize: TOY_TRAINING.groupSize, learningRate: TOY_TRAINING.learningRate, seed: TOY_TRAINING.seed, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] } });
    const r = await TrainingRun.start('toy-stability', spec, setup.deps);
    await r.run();
    setup.destroy();
    const rolling = r.history.map((m) => m.rollingReward);
    const reached = rolling.findIndex((x) => x >= 0.9);
    const after = reached < 0 ? [] : rolling.slice(reached);
    console.info(`[toy stability] rolling reward first >= 0.9 at step ${reached + 1}, min after ${Math.min(...after).toFixed(3)}, final ${rolling[rolling.length - 1].toFixed(3)}, best ${r.result?.step} (${r.result?.rollingReward.toFixed(3)})`);
    expect(reached).toBeGreaterThanOrEqual(0);
    expect(Math.min(...after)).toBeGreaterThanOrEqual(0.85);

    // The result is the first step with the highest rolling reward over a full window, and its checkpoint is kept.
    const full = r.history.slice(spec.bestWindow - 1);
    const top = Math.max(...full.map((m) => m.rollingReward));
    const bestStep = full.find((m) => m.rollingReward === top)!.step;
    expect(r.result).toMatchObject({ reason: 'best', step: bestStep, rollingReward: top });
    expect(r.history.filter((m) => m.best).at(-1)?.step).toBe(bestStep);
    const kept = (storage.checkpoints as MemoryCheckpointStore).saved.map((c) => c.step);
    expect(kept).toContain(bestStep);
  }, 120_000);
});
