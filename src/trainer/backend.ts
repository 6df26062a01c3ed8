// What a Flow-GRPO step needs from the hardware, so the step logic is written once and runs on the GPU
// (src/trainer/gpu-backend.ts) or, for tiny models, in float64 on the CPU (cpu-backend.ts).
import type { Qwen2Config } from '../io/qwen2-config';
import type { LoraAdapter } from '../io/peft';
import type { AdamWParams } from './adamw-cpu';
import type { GrpoLossParams, GrpoLossSums } from '../model/loss';
import type { PackedBatch } from '../model/samples';

/** AdamW moments by PEFT tensor name. */
export type Moments = Map<string, { m: Float32Array; v: Float32Array }>;

export interface TrainableState {
  adapter: LoraAdapter;
  moments: Moments;
}

export interface PolicyBackend {
  readonly modelConfig: Qwen2Config;
  /**
   * The backend's own micro-batch token budget, in place of GrpoConfig.microBatchTokens (a GPU memory bound).
   * The CPU prefix-tree backend takes a whole mini-batch (MAX_SAFE_INTEGER): its memory grows with the tree's depth, not
   * the batch, and a larger batch shares more prefixes. Gradients are the same either way (accumulated).
   */
  readonly microBatchTokens?: number;
  /** True where accumulate() takes GrpoLossParams.entropyCoef (the float64 CPU backends); grpoStep refuses a bonus elsewhere. */
  readonly entropyBonus?: boolean;
  /**
   * log p(target) of every row of `batch` (meaningful on its loss rows), with the trained adapter on or
   * off (off = the frozen reference policy).
   */
  logprobs(batch: PackedBatch, adapterOn: boolean): Promise<Float32Array>;
  /**
   * Forward and backward of one micro-batch with the adapter on: adds the LoRA gradient of the GRPO loss
   * over its response tokens, divided by `normalizer` (the mini-batch's token count), to the gradient
   * accumulators. Returns the loss sums of its tokens (for statistics).
   */
  accumulate(batch: PackedBatch, loss: GrpoLossParams, normalizer: number): Promise<GrpoLossSums>;
  zeroGrads(): void;
  /** L2 norm over all accumulated LoRA gradients. */
  gradNorm(): Promise<number>;
  /** One AdamW update of every LoRA tensor from the accumulated gradients. */
  adamw(p: AdamWParams): Promise<void>;
  /** Copies of the adapter and moments (for checkpoints). */
  exportState(): Promise<TrainableState>;
  importState(s: TrainableState): Promise<void>;
  /**
   * A copy of the adapter's weights alone, and setting them back: what a trust region needs to scale an update
   * back (moments and gradients are left as they are, and are not copied: on the GPU they are two thirds of
   * the state's bytes).
   */
  exportAdapter(): Promise<LoraAdapter>;
  /** Sets the adapter's weights in place; `a` must have the trained adapter's tensors and shapes (else it throws, naming the tensor). */
  importAdapter(a: LoraAdapter): Promise<void>;
}
