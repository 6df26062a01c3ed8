// Training speed for the benchmark: one real Flow-GRPO step through the code the planner worker runs
// (TrainingHost.trainStep -> grpoStep -> GpuPolicyBackend: reference logprobs with the adapter
// off, forward with kept activations, LoRA backward through the frozen base, gradient norm, AdamW), on a
// group of synthetic planner turns. Old logprobs are scored before the timed step, as the agent records them
// while sampling. GPU memory is counted by a BufferTracker on the device (every buffer, peak over the run).
import type { GpuContext } from '../src/gpu/device';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { LORA_MODULES } from '../src/io/peft';
import { Qwen2Runtime, type GpuMemoryReport } from '../src/engine/runtime';
import type { Q4WeightSource, WeightSource } from '../src/model/weights';
import type { StepStats } from '../src/trainer/grpo-step';
import type { TurnSample } from '../src/model/samples';
import { memoryTrainStorage } from '../src/trainer/checkpoint-memory';
import { runtimePolicyHost } from '../src/trainer/runtime-policy-host';
import { TrainingHost } from '../src/trainer/training-host';
import { BufferTracker } from './buffer-tracker';

export interface TrainBenchOptions {
  /** Planner turns in the group (the group's rollouts). */
  sequences: number;
  /** Tokens per turn, prompt + response. */
  tokens: number;
  /** Response tokens per turn (the rows the loss is on). */
  response: number;
  rank: number;
  /** The trainer's microBatchTokens (rows of one forward+backward pass). */
  microBatchTokens: number;
  /** Untimed steps before the timed one (pipeline compiles, step-list recording). */
  warmupSteps: number;
  /** The runtime's maxBatchRows (the planner's default is 512). */
  maxBatchRows: number;
}

export interface TrainResult {
  model: string;
  sequences: number;
  tokensPerSequence: number;
  responseTokensPerSequence: number;
  loraRank: number;
  loraTargets: readonly string[];
  microBatchTokens: number;
  microBatches: number;
  /** Wall clock of the timed Flow-GRPO step (reference logprobs + update), and its parts. */
  trainStepMs: number;
  stepMs: StepStats['ms'];
  /** Tokens of the group's sequences (prompt + response) per second of the timed step. */
  trainTokensPerSec: number;
  /** The trainer's own figure: forward+backward rows per second over the update phase. */
  updateTokensPerSec: number;
  warmupStepMs: number[];
  /** Most bytes of GPU buffers live at once from upload to the end of the timed step. */
  trainGpuPeakBytes: number;
  trainGpuPeakMiB: number;
  /** What the runtime reports after the step (weights, adapters incl. the trained one, its scoring plan). */
  runtimeMemory: GpuMemoryReport;
  /** Live buffer bytes after the step, by label prefix (model = weights, act = activation plans, train = backward pass, grad = LoRA gradients, base_model = AdamW moments). */
  liveByLabelMiB: Record<string, number>;
  lossFinite: boolean;
  gradNorm: number;
}

const MiB = 2 ** 20;

/** A group of `n` planner turns with distinct token ids and rewards split 1 / 0 (non-zero advantages). */
function turns(config: Qwen2Config, o: TrainBenchOptions): TurnSample[] {
  const prompt = o.tokens - o.response;
  return Array.from({ length: o.sequences }, (_, j) => {
    const ids = Array.from({ length: o.tokens }, (_, i) => (i * 7919 + 13 + j * 104729) % config.vocabSize);
    return { groupId: 'bench', rolloutId: `r${j}`, turn: 0, promptTokens: ids.slice(0, prompt), responseTokens: ids.slice(prompt), reward: j % 2 };
  });
}

export async function benchTraining(ctx: GpuContext, model: string, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, o: TrainBenchOptions, log: (s: string) => void): Promise<TrainResult> {
  if (!(o.response >= 1 && o.response < o.tokens)) throw new Error(`training bench: --train-response (${o.response}) must be at least 1 and less than --train-tokens (${o.tokens})`);
  if (o.tokens > o.microBatchTokens) throw new Error(`training bench: a turn of ${o.tokens} tokens does not fit --micro-batch ${o.microBatchTokens}`);
  const tracker = BufferTracker.install(ctx.device);
  let rt: Qwen2Runtime | null = null;
  let session: TrainingHost | null = null;
  try {
    rt = await Qwen2Runtime.create(ctx, config, tensors, { maxContext: o.tokens + 8, maxBatchRows: o.maxBatchRows });
    const policyHost = runtimePolicyHost(rt, model);
    session = new TrainingHost(() => policyHost, async () => memoryTrainStorage());
    await session.trainStart({
      runId: 'bench',
      adapter: { rank: o.rank, alpha: 2 * o.rank, targets: [...LORA_MODULES] },
      config: { groupSize: Math.max(2, o.sequences), queriesPerStep: 1, microBatchTokens: o.microBatchTokens, checkpointEvery: 0 },
    });
    const samples = turns(config, o);
    const oldLogprobs = async () => {
      // The agent records these while sampling with the training adapter active (the session made it active).
      const lp = await rt!.score(samples.map((s) => [...s.promptTokens, ...s.responseTokens]));
      return samples.map((s, i) => ({ ...s, oldLogprobs: lp[i].slice(s.promptTokens.length - 1) }));
    };
    const warmupStepMs: number[] = [];
    for (let w = 0; w < o.warmupSteps; w++) {
      const st = await session.trainStep(await oldLogprobs());
      warmupStepMs.push(st.ms.total);
      log(`${model}: warm-up training step ${(st.ms.total / 1000).toFixed(1)} s`);
    }
    const batch = await oldLogprobs();
    const t0 = performance.now();
    const st = await session.trainStep(batch);
    const ms = performance.now() - t0;
    const tokens = o.sequences * o.tokens;
    const byLabel: Record<string, number> = {};
    // Per-dispatch uniforms (labelled by kernel) round to 0 MiB; only the buffers that matter are listed.
    for (const e of tracker.byLabel()) if (e.bytes >= 0.005 * MiB) byLabel[e.label] = +(e.bytes / MiB).toFixed(2);
    const r: TrainResult = {
      model,
      sequences: o.sequences,
      tokensPerSequence: o.tokens,
      responseTokensPerSequence: o.response,
      loraRank: o.rank,
      loraTargets: LORA_MODULES,
      microBatchTokens: o.microBatchTokens,
      microBatches: Math.ceil(o.sequences / Math.floor(o.microBatchTokens / o.tokens)),
      trainStepMs: ms,
      stepMs: st.ms,
      trainTokensPerSec: tokens / (ms / 1000),
      updateTokensPerSec: st.tokensPerSecond,
      warmupStepMs,
      trainGpuPeakBytes: tracker.peak,
      trainGpuPeakMiB: tracker.peak / MiB,
      runtimeMemory: rt.memory(),
      liveByLabelMiB: byLabel,
      lossFinite: Number.isFinite(st.loss),
      gradNorm: st.gradNorm,
    };
    log(`${model}: training step ${(ms / 1000).toFixed(2)} s, ${r.trainTokensPerSec.toFixed(2)} tok/s, peak GPU memory ${r.trainGpuPeakMiB.toFixed(0)} MiB`);
    return r;
  } finally {
    session?.trainStop();
    rt?.destroy();
    tracker.uninstall();
  }
}
