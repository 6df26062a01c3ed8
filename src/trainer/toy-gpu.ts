// Toy mode on the GPU: the toy task's tiny planner on our WebGPU runtime, trained by the GPU backend
// (the same setup as the GPU learning test), for the UI or a benchmark. The CPU variant is built from
// CpuPolicyBackend + cpuTokenPolicy the same way.
import type { GpuContext } from '../gpu/device';
import { Qwen2Runtime } from '../engine/runtime';
import { Rng } from '../util/rng';
import type { CheckpointStore } from './checkpoint';
import { resolveGrpoConfig, type GrpoConfig } from './config';
import { GpuPolicyBackend, gpuTokenPolicy } from './gpu-backend';
import { initLoraAdapter } from './lora';
import { TOY_TRAINING, ToyRolloutSource, ToyTask, evaluateToy, toyModel, type ToyTaskOptions } from './toy-task';
import { GrpoTrainer } from './trainer';

export interface GpuToySession {
  task: ToyTask;
  trainer: GrpoTrainer;
  backend: GpuPolicyBackend;
  /** Mean reward of `perQuery` sampled rollouts of every query with the current adapter. */
  evaluate(perQuery?: number, seed?: number): Promise<number>;
  destroy(): void;
}

export async function createGpuToySession(
  ctx: GpuContext,
  o: { runId: string; task?: ToyTaskOptions; config?: Partial<GrpoConfig>; rank?: number; alpha?: number; store?: CheckpointStore; zeroAdvantages?: boolean } = { runId: 'toy' },
): Promise<GpuToySession> {
  const task = new ToyTask(o.task);
  const model = toyModel(task, { seed: 1234, ...o.task });
  const cfg = resolveGrpoConfig({ ...TOY_TRAINING, microBatchTokens: 512, ...o.config });
  const rt = await Qwen2Runtime.create(ctx, model.config, model.source, { maxContext: 16, maxBatchRows: cfg.microBatchTokens });
  try {
    const adapter = initLoraAdapter(model.config, { r: o.rank ?? 4, alpha: o.alpha ?? 8 }, new Rng(cfg.seed + 4));
    const backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: cfg.microBatchTokens, logitsRows: 64 });
    const policy = gpuTokenPolicy(backend);
    const trainer = new GrpoTrainer(backend, cfg, new ToyRolloutSource(task, policy, cfg), { runId: o.runId, store: o.store, baseModel: 'toy-qwen2', zeroAdvantages: o.zeroAdvantages });
    return {
      task,
      trainer,
      backend,
      evaluate: (perQuery = 32, seed = 99) => evaluateToy(task, policy, perQuery, 1, new Rng(seed)),
      destroy: () => {
        backend.destroy();
        rt.destroy();
      },
    };
  } catch (e) {
    rt.destroy();
    throw e;
  }
}
