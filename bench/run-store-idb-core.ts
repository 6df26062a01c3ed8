// The measurement of bench/run-store-idb.ts, without an IndexedDB of its own: it runs on fake-indexeddb in
// Node, and bundled into Chromium on its real IndexedDB (--browser).
import type { RolloutRecord } from '../src/store/records';
import type { StepMetrics } from '../src/trainer/run/metrics';
import type { IdbRunStore } from '../src/trainer/run/run-store-idb';
import type { StoredRun } from '../src/trainer/run/run-store';

export interface StoreBenchRow {
  steps: number;
  msPerStep: number;
  loadMs: number;
}

function metrics(step: number): StepMetrics {
  const r = (step % 16) / 16;
  return { step, reward: r, rewardStd: 0.4, rollingReward: r, loss: 0.0123, kl: 0.00012, gradNorm: 0.8, clipFraction: 0.01, tokensPerSecond: 1234.5, plannerTokens: 512, samples: 16, noGradientGroups: 1, rolloutSeconds: 0.04, updateSeconds: 0.02, ...(step % 7 === 0 ? { best: true } : {}) };
}

/** The toy task's step: 16 one-turn rollouts. */
function rollouts(runId: string, step: number): RolloutRecord[] {
  return Array.from({ length: 16 }, (_, k) => ({ id: `${runId}:step${step}:r${k}`, runId, step, groupId: `${runId}:step${step}`, rollout: k, turn: 1, reward: k % 2, advantage: 0.5, createdAt: 0 }) as unknown as RolloutRecord);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** For each run length in `at`: the median ms of storing `steps` more steps, and the ms to load the run. */
export async function benchRunStore(Store: typeof IdbRunStore, at: number[], steps: number, log: (s: string) => void): Promise<StoreBenchRow[]> {
  const out: StoreBenchRow[] = [];
  // The first pass warms the JIT up and is not reported.
  for (const [i, n] of [at[0], ...at].entries()) {
    const store = new Store(`bench-run-store-${n}-${Math.random()}`);
    const run: StoredRun = {
      id: `toy-${n}`,
      createdAt: 0,
      updatedAt: 0,
      status: 'running',
      spec: { task: 'toy', label: 'bench', dataset: 'toy', steps: n + steps + 1, grpo: {}, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q'] }, keepCheckpoints: 3, bestWindow: 20, collector: {} },
      history: Array.from({ length: n - 1 }, (_, k) => metrics(k + 1)),
      result: null,
    };
    await store.save(run);
    // Step n (untimed) brings the run to n steps as a run of n steps would have stored them.
    const step = async (s: number) => {
      const m = metrics(s);
      await store.appendStep(run, m, rollouts(run.id, s));
      run.history.push(m);
      await store.save(run);
    };
    await step(n);
    const times: number[] = [];
    for (let s = n + 1; s <= n + steps; s++) {
      const t0 = performance.now();
      await step(s);
      times.push(performance.now() - t0);
    }
    const t0 = performance.now();
    const back = await store.load(run.id);
    const loadMs = performance.now() - t0;
    if (back?.history.length !== run.history.length) throw new Error(`bench: loaded ${back?.history.length} steps of ${run.history.length}`);
    if (i === 0) continue;
    out.push({ steps: n, msPerStep: +median(times).toFixed(2), loadMs: +loadMs.toFixed(1) });
    log(`at step ${n}: ${median(times).toFixed(2)} ms per step (median of ${steps}), load ${loadMs.toFixed(1)} ms`);
  }
  return out;
}
