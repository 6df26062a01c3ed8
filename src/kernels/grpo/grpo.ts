import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { GRPO_WG, grpoWgsl } from './grpo.wgsl';
import type { GrpoHyper } from './grpo.ref';

export type { GrpoHyper } from './grpo.ref';

export interface GrpoArgs extends GrpoHyper {
  /** f32 [T]: log-probs of each token under the current policy (with the adapter). */
  logp: GPUBuffer;
  /** f32 [T]: log-probs under the policy that sampled the rollouts. */
  old: GPUBuffer;
  /** f32 [T]: log-probs under the frozen reference (base model, no adapter). */
  ref: GPUBuffer;
  /** f32 [T]: the sample's advantage, repeated for each of its tokens. */
  advantage: GPUBuffer;
  /** f32 [T]: 1/N on response tokens (N = response tokens in the batch), 0 on prompt tokens. */
  weight: GPUBuffer;
  /** f32 [T] out: d loss / d logp (already weighted). */
  dlogp: GPUBuffer;
  /**
   * f32 [3, T] out, planar: weight*term | weight*clipped (0/1 flag) | weight*k3. Summing each plane
   * (reduce/sum) gives the loss, the clip fraction and the mean k3 over response tokens.
   */
  stats: GPUBuffer;
  tokens: number;
}

export async function grpoLoss(ctx: GpuContext, a: GrpoArgs): Promise<Dispatch> {
  checkDims('grpoLoss', { tokens: a.tokens });
  for (const k of ['epsLow', 'epsHigh', 'beta'] as const) {
    if (!Number.isFinite(a[k]) || a[k] < 0) throw new Error(`grpoLoss: '${k}' must be a finite number >= 0, got ${a[k]}`);
  }
  const pipeline = await getPipeline(ctx, 'grpo_loss', grpoWgsl());
  const params = paramsUniform(ctx, 'grpo.params', [['u32', a.tokens], ['f32', a.epsLow], ['f32', a.epsHigh], ['f32', a.beta]]);
  return {
    pipeline,
    buffers: [a.logp, a.old, a.ref, a.advantage, a.weight, a.dlogp, a.stats, params],
    workgroups: grid1d(ctx, Math.ceil(a.tokens / GRPO_WG)),
    label: 'grpo_loss',
  };
}
