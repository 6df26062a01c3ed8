// The end-to-end benchmark (`npm run bench -- --parts e2e`): whole Flow-GRPO steps of a training run as `cli
// train` wires one (TrainingRun -> AgentCollector playing a group of rollouts of the AgentFlow loop at once ->
// stepBatch -> TrainingHost's update on the planner's own runtime -> checkpoint), on a model with random
// weights. Every module call generates a fixed number of tokens with a scripted text the loop accepts
// (fixed-length-engine.ts, e2e-script.ts), so each step does the same work and the time is the engine's.
// Untimed warm-up steps first (pipeline compiles, step-list recording), then the timed ones, each reported
// as: step, rollout and update seconds; per module its calls, their summed and overlapping wall time and its
// share of the runtime's time; the planner's and the frozen modules' decode steps and sequences per step;
// the trained tokens; and the GPU memory peak over the whole run (BufferTracker).
import type { ModuleName } from '../src/agent/prompts';
import { baseModelView } from '../src/engine/base-model-view';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { LORA_MODULES } from '../src/io/peft';
import { Qwen2Runtime, type GpuMemoryReport } from '../src/engine/runtime';
import type { Q4WeightSource, WeightSource } from '../src/model/weights';
import type { GpuContext } from '../src/gpu/device';
import { memoryTrainStorage } from '../src/trainer/checkpoint-memory';
import { agentRunDeps, agentRunSpec } from '../src/trainer/run/agent-run';
import type { StepMetrics } from '../src/trainer/run/metrics';
import { MemoryRunStore } from '../src/trainer/run/run-store-memory';
import { TrainingRun } from '../src/trainer/run/training-run';
import { runtimePolicyHost } from '../src/trainer/runtime-policy-host';
import { TrainingHost } from '../src/trainer/training-host';
import { BufferTracker } from './buffer-tracker';
import { E2E_ITEM, e2eReply, e2eTools } from './e2e-script';
import { FixedLengthEngine, type ModuleCall, type ModuleLengths } from './fixed-length-engine';
import type { RuntimeCall } from './runtime-log';

export interface E2eOptions {
  /** Rollouts per group (one query per step). */
  group: number;
  /** Planner turns per rollout (the loop's maxTurns). */
  turns: number;
  /** Rollouts of the group that run at once. */
  concurrency: number;
  warmupSteps: number;
  steps: number;
  lengths: ModuleLengths;
  rank: number;
  /** The planner's sampling temperature (the run's; bench/run.ts says why its default is 0.01). */
  temperature: number;
  microBatchTokens: number;
  /** The runtime's context; a batch may grow the KV cache to twice it, as the planner's does. */
  maxContext: number;
}

export const MODULES: readonly ModuleName[] = ['analysis', 'planner', 'executor', 'verifier', 'generator'];

export interface ModuleStats {
  calls: number;
  promptTokensMean: number;
  /** Prompt characters per prompt token (the chunk tokenizer's ratio on this module's prompts). */
  charsPerToken: number;
  newTokensPerCall: number;
  /** Prompt tokens not prefilled again (KV reused from an earlier call or shared in a batch), summed. */
  reusedPromptTokens: number;
  /** Summed wall time of the calls, waiting in the batcher included; calls of concurrent rollouts overlap. */
  callSeconds: number;
  /** Wall time during which at least one call of the module was in flight. */
  busySeconds: number;
  /** The module's share of the runtime's time: each runtime call's time split evenly over its sequences. */
  engineSeconds: number;
  /** Tokens the GPU draw left to the CPU (flat rows of random weights: far more than a trained model's). */
  redrawnTokens: number;
}

export interface DecodeStats {
  /** Runtime calls (one sequence alone, or a batch). */
  runtimeCalls: number;
  steps: number;
  /** Sequences' rows the steps computed; sequencesPerStep = sequences / steps. */
  sequences: number;
  sequencesPerStep: number;
  /**
   * Rows the decode needed (new tokens after each call's first); sequences - tokens rows were computed again
   * after undecided GPU draws, which random weights' flat rows cause at temperature > 0 (a trained model's
   * peaked rows rarely do): tokens / steps is what the batching gives without them.
   */
  tokens: number;
  /** Wall time of those runtime calls (prefill included). */
  seconds: number;
}

export interface E2eStep {
  step: number;
  /** From the end of the previous step (or the run's start) to the end of this one. */
  stepSeconds: number;
  rolloutSeconds: number;
  updateSeconds: number;
  /** The rest of the step: reward and advantages, storing the step, its checkpoint (memory store). */
  otherSeconds: number;
  modules: Record<ModuleName, ModuleStats>;
  /** Time the runtime was generating during the rollouts (the rest: batcher waits, tools, the loop's JS). */
  engineSeconds: number;
  decode: { planner: DecodeStats; frozen: DecodeStats };
  /** Planner turns trained on, their tokens (prompt + response) and response tokens. */
  trainingTurns: number;
  trainingTokens: number;
  responseTokens: number;
  updateTokensPerSec: number;
  reward: number;
  loss: number;
  gradNorm: number;
  skippedUpdate?: string;
}

export interface E2eResult {
  model: string;
  group: number;
  turns: number;
  concurrency: number;
  queriesPerStep: 1;
  lengths: ModuleLengths;
  loraRank: number;
  loraTargets: readonly string[];
  temperature: number;
  microBatchTokens: number;
  maxContext: number;
  /** Sequences one decode step of this runtime takes (8 on 4-bit weights, 4 on f16). */
  maxDecodeRows: number;
  warmupStepSeconds: number[];
  steps: E2eStep[];
  /** Most bytes of GPU buffers live at once from the upload to the end of the last step. */
  gpuPeakBytes: number;
  gpuPeakMiB: number;
  runtimeMemory: GpuMemoryReport;
}

const MiB = 2 ** 20;
const now = () => performance.now();

/** Total length of the union of [start, end] intervals. */
export function unionMs(spans: ReadonlyArray<{ start: number; end: number }>): number {
  const s = [...spans].sort((a, b) => a.start - b.start);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const x of s) {
    if (x.start > to) {
      if (to > from) total += to - from;
      from = x.start;
      to = x.end;
    } else to = Math.max(to, x.end);
  }
  if (to > from) total += to - from;
  return total;
}

export function moduleStats(calls: readonly ModuleCall[], runtimeCalls: readonly RuntimeCall[]): Record<ModuleName, ModuleStats> {
  const engineMs = new Map<string, number>();
  for (const c of runtimeCalls) for (const t of c.tags) engineMs.set(t, (engineMs.get(t) ?? 0) + c.ms / c.tags.length);
  const out = {} as Record<ModuleName, ModuleStats>;
  for (const m of MODULES) {
    const mine = calls.filter((c) => c.module === m);
    const sum = (f: (c: ModuleCall) => number) => mine.reduce((a, c) => a + f(c), 0);
    const prompt = sum((c) => c.promptTokens);
    out[m] = {
      calls: mine.length,
      promptTokensMean: mine.length ? prompt / mine.length : 0,
      charsPerToken: prompt ? sum((c) => c.promptChars) / prompt : 0,
      newTokensPerCall: mine.length ? sum((c) => c.newTokens) / mine.length : 0,
      reusedPromptTokens: sum((c) => c.reusedPromptTokens),
      callSeconds: sum((c) => c.end - c.start) / 1000,
      busySeconds: unionMs(mine) / 1000,
      engineSeconds: (engineMs.get(m) ?? 0) / 1000,
      redrawnTokens: sum((c) => c.redrawnTokens),
    };
  }
  return out;
}

export function decodeStats(calls: readonly RuntimeCall[]): DecodeStats {
  const steps = calls.reduce((a, c) => a + c.decodeSteps, 0);
  const sequences = calls.reduce((a, c) => a + c.decodeRows, 0);
  const tokens = calls.reduce((a, c) => a + c.decodeTokens, 0);
  return { runtimeCalls: calls.length, steps, sequences, sequencesPerStep: steps ? sequences / steps : 0, tokens, seconds: calls.reduce((a, c) => a + c.ms, 0) / 1000 };
}

export async function benchE2e(ctx: GpuContext, model: string, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, o: E2eOptions, log: (s: string) => void): Promise<E2eResult> {
  const tracker = BufferTracker.install(ctx.device);
  let rt: Qwen2Runtime | null = null;
  let host: TrainingHost | null = null;
  try {
    // End-of-sequence ignored: the runtime always stops at its config's eos ids, so it gets a config with none.
    rt = await Qwen2Runtime.create(ctx, { ...config, eosTokenIds: [] }, tensors, { maxContext: o.maxContext, batchContext: 2 * o.maxContext });
    const runtime = rt;
    const engine = new FixedLengthEngine(runtime, { lengths: o.lengths, reply: e2eReply, name: model });
    // As `cli train`: one engine serves every module, the frozen ones on its base weights.
    const engines = { planner: engine, shared: baseModelView(engine) };
    const frozenTokens = Math.max(o.lengths.analysis, o.lengths.executor, o.lengths.verifier, o.lengths.generator);
    const spec = agentRunSpec({
      benchmark: { name: 'e2e', kind: 'exact', items: [E2E_ITEM] },
      planner: engine.id,
      steps: o.warmupSteps + o.steps,
      groupSize: o.group,
      seed: 1,
      adapter: { kind: 'fresh', rank: o.rank, alpha: 2 * o.rank, targets: [...LORA_MODULES] },
      // The engine generates its own fixed lengths; these budgets only say the same to the loop.
      budget: { maxTurns: o.turns, plannerTokens: o.lengths.planner, moduleTokens: frozenTokens, queriesPerStep: 1, microBatchTokens: o.microBatchTokens, rolloutConcurrency: o.concurrency },
      grpo: { temperature: o.temperature },
      // As `cli train`, which checkpoints every step.
      checkpointEvery: 1,
    });
    host = new TrainingHost(() => runtimePolicyHost(runtime, model), async () => memoryTrainStorage());
    const deps = agentRunDeps('e2e', spec, { engines, tools: e2eTools(), policy: host, store: new MemoryRunStore(), decodeStats: async () => ({ ...engine.log.totals.adapter }) });
    const run = await TrainingRun.start('e2e', spec, deps);
    const warmupStepSeconds: number[] = [];
    const steps: E2eStep[] = [];
    let t0 = now();
    await run.run({
      onStep: (m: StepMetrics) => {
        const t1 = now();
        const stepSeconds = (t1 - t0) / 1000;
        t0 = t1;
        const calls = engine.takeCalls();
        const runtimeCalls = engine.log.take();
        if (m.step <= o.warmupSteps) {
          warmupStepSeconds.push(stepSeconds);
          log(`${model}: e2e warm-up step ${m.step}: ${stepSeconds.toFixed(1)} s`);
          return;
        }
        const planner = calls.filter((c) => c.module === 'planner');
        const s: E2eStep = {
          step: m.step,
          stepSeconds,
          rolloutSeconds: m.rolloutSeconds,
          updateSeconds: m.updateSeconds,
          otherSeconds: stepSeconds - m.rolloutSeconds - m.updateSeconds,
          modules: moduleStats(calls, runtimeCalls),
          engineSeconds: runtimeCalls.reduce((a, c) => a + c.ms, 0) / 1000,
          decode: { planner: decodeStats(runtimeCalls.filter((c) => c.adapter !== null)), frozen: decodeStats(runtimeCalls.filter((c) => c.adapter === null)) },
          trainingTurns: m.samples,
          trainingTokens: planner.reduce((a, c) => a + c.promptTokens + c.newTokens, 0),
          responseTokens: m.plannerTokens,
          updateTokensPerSec: m.tokensPerSecond,
          reward: m.reward,
          loss: m.loss,
          gradNorm: m.gradNorm,
          ...(m.skippedUpdate ? { skippedUpdate: m.skippedUpdate } : {}),
        };
        steps.push(s);
        const p = s.decode.planner;
        log(
          `${model}: e2e step ${m.step}: ${stepSeconds.toFixed(2)} s (rollouts ${s.rolloutSeconds.toFixed(2)} s, update ${s.updateSeconds.toFixed(2)} s); ` +
            `planner ${p.steps} decode steps, ${p.sequencesPerStep.toFixed(2)} sequences a step (${p.sequences - p.tokens} of ${p.sequences} rows recomputed after undecided draws); ` +
            MODULES.map((k) => `${k} ${s.modules[k].calls} x ${s.modules[k].engineSeconds.toFixed(2)} s`).join(', '),
        );
      },
    });
    return {
      model,
      group: o.group,
      turns: o.turns,
      concurrency: o.concurrency,
      queriesPerStep: 1,
      lengths: { ...o.lengths },
      loraRank: o.rank,
      loraTargets: LORA_MODULES,
      temperature: o.temperature,
      microBatchTokens: o.microBatchTokens,
      maxContext: o.maxContext,
      maxDecodeRows: runtime.maxDecodeRows,
      warmupStepSeconds,
      steps,
      gpuPeakBytes: tracker.peak,
      gpuPeakMiB: tracker.peak / MiB,
      runtimeMemory: runtime.memory(),
    };
  } finally {
    host?.trainStop();
    rt?.destroy();
    tracker.uninstall();
  }
}
