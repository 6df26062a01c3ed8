// Proof that the Flow-GRPO loop learns, on the float64 CPU backend (the GPU version of the same proof is
// toy-learning.gpu.test.ts): seeded training raises the toy task's reward from chance to >= 0.9, and the
// identical loop with advantages forced to zero does not move from chance.
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng';
import { resolveGrpoConfig } from './config';
import { CpuPolicyBackend, cpuTokenPolicy } from './cpu-backend';
import { initLoraAdapter } from './lora';
import { ToyRolloutSource, ToyTask, evaluateToy, toyModel } from './toy-task';
import { GrpoTrainer } from './trainer';
import { TOY_TRAINING } from './toy-task';

const STEPS = 40;

async function run(zeroAdvantages: boolean): Promise<{ curve: number[]; before: number; after: number }> {
  const task = new ToyTask();
  const model = toyModel(task, { seed: 1234 });
  const adapter = initLoraAdapter(model.config, { r: 4, alpha: 8 }, new Rng(7));
  const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
  const policy = cpuTokenPolicy(backend);
  const cfg = resolveGrpoConfig(TOY_TRAINING);
  const source = new ToyRolloutSource(task, policy, cfg);
  const trainer = new GrpoTrainer(backend, cfg, source, { runId: 'toy', zeroAdvantages });
  const before = await evaluateToy(task, policy, 32, 1, new Rng(99));
  const curve: number[] = [];
  for (let s = 0; s < STEPS; s++) curve.push((await trainer.trainStep()).rewardMean);
  const after = await evaluateToy(task, policy, 32, 1, new Rng(99));
  return { curve, before, after };
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
    expect(trained.before).toBeLessThanOrEqual(0.25);
    expect(trained.after).toBeGreaterThanOrEqual(0.9);
    expect(control.after).toBeLessThanOrEqual(0.25);
    expect(Math.abs(control.after - control.before)).toBeLessThan(0.1);
  }, 300_000);
});
