// The toy task as a training run: its tiny planner is the policy (float64 on the CPU, or our WebGPU runtime),
// the ToyCollector plays its rollouts with the adapter being trained, and the same TrainingRun as for the
// real planner does the rest. The Training tab's toy mode, the learning proofs and `cli train --task toy`
// are built from this.
import type { GpuContext } from '../../gpu/device';
import { Qwen2Runtime } from '../../engine/runtime';
import { Rng } from '../../util/rng';
import { CpuPolicyBackend, cpuTokenPolicy } from '../cpu-backend';
import { GpuPolicyBackend, gpuTokenPolicy } from '../gpu-backend';
import type { TokenPolicy } from '../token-policy';
import { evaluateToy, toyModel, ToyTask, type ToyModel, type ToyTaskOptions } from '../toy-task';
import { TrainingHost, type PolicyHost, type TrainStorage } from '../training-host';
import { ToyCollector } from './toy-collector';
import type { RunDeps } from './training-run';
import type { RunSpec, RunStore, StartAdapterSpec } from './run-store';
import { DEFAULT_GRPO_CONFIG, type GrpoConfig } from '../grpo-config';
import { DEFAULT_BEST_WINDOW } from './metrics';

/** The base model name toy adapters carry (the adapter list offers only these for toy runs). */
export const TOY_BASE_MODEL = 'agentflow-toy';

/** The toy task's tiny planner, trained in float64 on the CPU (any browser, no WebGPU needed). */
export function cpuToyHost(model: ToyModel): PolicyHost {
  return {
    modelConfig: model.config,
    baseModel: TOY_BASE_MODEL,
    async createBackend(adapter) {
      const backend = new CpuPolicyBackend(model.config, model.weights, adapter);
      return { backend, adapterId: 'cpu', maxRows: Number.POSITIVE_INFINITY, destroy: () => undefined };
    },
  };
}

/**
 * The toy task's tiny planner on our WebGPU runtime (rollouts, scoring, backward and AdamW on the GPU). The
 * runtime's rows must hold a whole micro-batch: the step packs up to `microBatchTokens` rows into one pass
 * (a toy turn is about 4 tokens, so the default group's 192 turns fill 764 of the default 768), so it is
 * sized to the Flow-GRPO default and a run asking for larger micro-batches is refused naming the setting.
 */
export async function gpuToyHost(ctx: GpuContext, model: ToyModel, maxRows: number = DEFAULT_GRPO_CONFIG.microBatchTokens): Promise<PolicyHost & { runtime: Qwen2Runtime }> {
  const runtime = await Qwen2Runtime.create(ctx, model.config, model.source, { maxContext: 16, maxBatchRows: maxRows });
  return {
    runtime,
    modelConfig: model.config,
    baseModel: TOY_BASE_MODEL,
    async createBackend(adapter, o) {
      if (o.config.microBatchTokens > maxRows) {
        throw new Error(`toy task on the GPU: the Flow-GRPO setting 'microBatchTokens' (${o.config.microBatchTokens}) exceeds the ${maxRows} rows this runtime was made for`);
      }
      const backend = await GpuPolicyBackend.create(runtime, adapter, { adapterId: `training:${o.runId}`, maxRows: o.config.microBatchTokens, logitsRows: 64 });
      return { backend, adapterId: backend.adapterId, maxRows: backend.maxRows, destroy: () => backend.destroy() };
    },
  };
}

/**
 * Flow-GRPO settings of a toy run: every query each step (the task has 6), no weight decay and no KL
 * penalty, so a control run with zero advantages keeps the adapter exactly where it started. The learning
 * rate decays (cosine, to a tenth) over the run's steps: once the task is solved, the rare failing rollout's
 * full-size Adam steps flip solved queries (README, "Toy training"). Up to 32 extra rollouts (two groups'
 * worth) for a query whose group all failed: at lr 0.02 seed 3 left a query on a wrong answer for good with
 * the agent's 8 (final rolling reward 0.76 after 150 steps), and 32 reached 0.9 at step 23. Adam's beta2 0.99:
 * a solved run's gradient is small for many steps and then a rare failure's is large; with beta2 0.999 the
 * second moment lags, the update of that step is several times the rate, and at lr 0.02 seed 7 flipped two
 * solved queries at once (rolling reward down to 0.84). Adam eps 1e-3: the clipped gradient is spread over
 * every adapter weight, and weights whose gradient is far below eps no longer move by the full rate on it;
 * at lr 0.02 seeds 105, 106 and 110 without it flipped solved queries or never solved one (min rolling reward
 * 0.62, 0.73, 0.80), with it all three stayed above 0.90. Measured with bench/toy-stability.ts (README).
 */
export const TOY_GRPO = { weightDecay: 0, beta: 0, extraRollouts: 32, adamBeta2: 0.99, adamEps: 1e-3 } as const;

/** A checked spec for a toy run. */
export function toyRunSpec(s: { steps: number; groupSize: number; learningRate: number; seed?: number; adapter: StartAdapterSpec; label?: string; task?: ToyTaskOptions; keepCheckpoints?: number; bestWindow?: number; grpo?: Partial<GrpoConfig> }): RunSpec {
  const task = new ToyTask(s.task);
  return {
    task: 'toy',
    label: s.label ?? 'Toy task (tiny planner)',
    dataset: 'toy',
    steps: s.steps,
    grpo: {
      ...TOY_GRPO,
      ...s.grpo,
      learningRate: s.learningRate,
      groupSize: s.groupSize,
      queriesPerStep: task.numQueries,
      seed: s.seed ?? 3,
      lrDecaySteps: s.grpo?.lrDecaySteps ?? s.steps,
      checkpointEvery: s.grpo?.checkpointEvery ?? Math.max(1, Math.min(10, s.steps)),
    },
    adapter: s.adapter,
    keepCheckpoints: s.keepCheckpoints ?? 3,
    bestWindow: s.bestWindow ?? DEFAULT_BEST_WINDOW,
    collector: s.task ? { task: { ...s.task } } : {},
  };
}

export interface ToyRunSetup {
  task: ToyTask;
  model: ToyModel;
  host: TrainingHost;
  deps: RunDeps;
  /** The live policy of the training session (throws before trainStart). */
  policy(): TokenPolicy;
  /** Mean reward of `perQuery` sampled rollouts (temperature 1) of every query with the adapter as it is now. */
  evaluate(perQuery?: number, seed?: number): Promise<number>;
  destroy(): void;
}

/**
 * Everything a toy run needs: the task and its model (seed 1234, as the Training tab has always used), a
 * TrainingHost on the chosen backend, and the collector. The run's sampling temperature is the one given.
 */
export async function toyRunSetup(o: {
  store: RunStore;
  storage: (dbName?: string) => Promise<TrainStorage>;
  backend: 'cpu' | { gpu: GpuContext; maxRows?: number };
  task?: ToyTaskOptions;
  temperature?: number;
  dbName?: string;
}): Promise<ToyRunSetup> {
  const task = new ToyTask(o.task);
  const model = toyModel(task, { seed: 1234, ...o.task });
  const gpu = o.backend === 'cpu' ? null : await gpuToyHost(o.backend.gpu, model, o.backend.maxRows);
  const policyHost = gpu ?? cpuToyHost(model);
  const host = new TrainingHost(() => policyHost, o.storage);
  const policy = (): TokenPolicy => {
    const s = host.current;
    if (!s) throw new Error('toy task: no training session is running');
    return s.backend instanceof CpuPolicyBackend ? cpuTokenPolicy(s.backend) : gpuTokenPolicy(s.backend as GpuPolicyBackend);
  };
  const collector = new ToyCollector(task, policy, o.temperature ?? 1, () => host.current?.adapterId ?? null);
  return {
    task,
    model,
    host,
    deps: { collector, policy: host, store: o.store, ...(o.dbName !== undefined ? { dbName: o.dbName } : {}) },
    policy,
    evaluate: (perQuery = 32, seed = 99) => evaluateToy(task, policy(), perQuery, 1, new Rng(seed)),
    destroy() {
      host.trainStop();
      gpu?.runtime.destroy();
    },
  };
}
