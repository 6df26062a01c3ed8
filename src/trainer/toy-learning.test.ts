// Proof that the Flow-GRPO loop learns, on the float64 CPU backend (the GPU version of the same proof is
// toy-learning.node.gpu.test.ts), through the library's TrainingRun as the Training tab runs it: seeded
// training raises the toy task's reward from chance to >= 0.9, and the identical run with advantages forced
// to zero does not move from chance.
import { describe, expect, it } from 'vitest';
import { memoryTrainStorage } from './checkpoint-memory';
import { MemoryRunStore } from './run/run-store-memory';
import { toyRunSetup, toyRunSpec } from './run/toy-run';
import { TrainingRun } from './run/training-run';
import { TOY_TRAINING, ToyTask } from './toy-task';

const STEPS = 40;

async function run(zeroAdvantages: boolean): Promise<{ curve: number[]; before: number; after: number }> {
  const setup = await toyRunSetup({ store: new MemoryRunStore(), storage: async () => memoryTrainStorage(), backend: 'cpu' });
  const spec = { ...toyRunSpec({ steps: STEPS, groupSize: TOY_TRAINING.groupSize, learningRate: TOY_TRAINING.learningRate, seed: TOY_TRAINING.seed, grpo: { beta: 0.001 }, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] } }), zeroAdvantages };
  const r = await TrainingRun.start(zeroAdvantages ? 'toy-control' : 'toy', spec, setup.deps);
  const before = await setup.evaluate();
  // The run ends the session when done; evaluate at the last step, before that.
  let after = NaN;
  await r.run({ onStep: () => undefined, onCheckpoint: async (c) => void (c.step === STEPS && (after = await setup.evaluate())) });
  setup.destroy();
  return { curve: r.history.map((m) => m.reward), before, after };
}

describe('Flow-GRPO learns the toy task (CPU backend)', () => {
  it(`raises mean reward from chance to >= 0.9 in ${STEPS} steps; the zero-advantage control does not`, async () => {
    const task = new ToyTask();
    const chance = 1 / (task.numActions * task.numActions);
    const trained = await run(false);
    const control = await run(true);
    const fmt = (c: number[]) => c.map((r) => r.toFixed(2)).join(' ');
    console.info(`[toy cpu] reward curve (GRPO):    ${fmt(trained.curve)}\n[toy cpu] reward curve (control): ${fmt(control.curve)}`);
    console.info(`[toy cpu] eval before ${trained.before.toFixed(3)}, after GRPO ${trained.after.toFixed(3)}, after control ${control.after.toFixed(3)} (chance 1/K² = ${chance.toFixed(3)})`);
    expect(trained.curve).toHaveLength(STEPS);
    expect(trained.before).toBeLessThanOrEqual(0.25);
    expect(trained.after).toBeGreaterThanOrEqual(0.9);
    expect(control.after).toBeLessThanOrEqual(0.25);
    expect(Math.abs(control.after - control.before)).toBeLessThan(0.1);
  }, 300_000);
});
