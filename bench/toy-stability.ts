// Does toy training stay learned? Runs the toy task on the float64 CPU backend for several seeds and prints,
// per seed: the first step whose 20-step rolling reward reaches 0.9, the minimum rolling reward after it, the
// final rolling reward and the best step. Usage (one process per seed runs them in parallel):
//   npx tsx bench/toy-stability.ts [--steps 1000] [--seeds 1,2,3,4,5] [--lr 0.01] [--group 16] [--grpo '{"beta":0}']
import { memoryTrainStorage } from '../src/trainer/checkpoint-memory';
import type { GrpoConfig } from '../src/trainer/config';
import { MemoryRunStore } from '../src/trainer/run/run-store-memory';
import { toyRunSetup, toyRunSpec } from '../src/trainer/run/toy-run';
import { TrainingRun } from '../src/trainer/run/training-run';
import { TOY_TRAINING } from '../src/trainer/toy-task';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

export interface StabilitySummary {
  seed: number;
  reached: number | null;
  minAfter: number | null;
  final: number;
  bestStep: number | null;
  best: number | null;
  seconds: number;
}

export async function toyStability(o: { seed: number; steps: number; lr: number; group: number; grpo: Partial<GrpoConfig> }): Promise<StabilitySummary> {
  const t0 = Date.now();
  const setup = await toyRunSetup({ store: new MemoryRunStore(), storage: async () => memoryTrainStorage(), backend: 'cpu' });
  const spec = toyRunSpec({ steps: o.steps, groupSize: o.group, learningRate: o.lr, seed: o.seed, grpo: { checkpointEvery: o.steps, ...o.grpo }, keepCheckpoints: 1, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] } });
  const r = await TrainingRun.start(`toy-stability-${o.seed}`, spec, setup.deps);
  await r.run();
  setup.destroy();
  const rolling = r.history.map((m) => m.rollingReward);
  const at = rolling.findIndex((x) => x >= 0.9);
  return {
    seed: o.seed,
    reached: at < 0 ? null : at + 1,
    minAfter: at < 0 ? null : Math.min(...rolling.slice(at)),
    final: rolling[rolling.length - 1],
    bestStep: r.result?.step ?? null,
    best: r.result?.rollingReward ?? null,
    seconds: (Date.now() - t0) / 1000,
  };
}

async function main(): Promise<void> {
  const steps = Number(arg('steps') ?? 1000);
  const seeds = (arg('seeds') ?? '1,2,3,4,5').split(',').map(Number);
  const lr = Number(arg('lr') ?? TOY_TRAINING.learningRate);
  const group = Number(arg('group') ?? TOY_TRAINING.groupSize);
  const grpo = JSON.parse(arg('grpo') ?? '{}') as Partial<GrpoConfig>;
  const f = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  for (const seed of seeds) {
    const s = await toyStability({ seed, steps, lr, group, grpo });
    console.log(`seed ${s.seed}: first 0.9 at ${s.reached ?? '-'}, min after ${f(s.minAfter)}, final ${f(s.final)}, best ${s.bestStep ?? '-'} (${f(s.best)}), ${s.seconds.toFixed(0)} s  [lr ${lr} group ${group} ${JSON.stringify(grpo)}]`);
  }
}

if (process.argv[1]?.endsWith('toy-stability.ts')) main().catch((e) => {
  console.error(e);
  process.exit(1);
});
