// npm run bench [-- --models fixture,fixture-q4,qwen2.5-0.5b,qwen2.5-0.5b-q4 --parts speed,memory,train,e2e --prompt N
//   --decode N --context N --batch-rows N --lora-rank R --bandwidth GB/s --train-seqs N --train-tokens N
//   --train-response N --train-rank R --micro-batch N --train-warmup N
//   --e2e-group G --e2e-turns T --e2e-concurrency C --e2e-warmup N --e2e-steps N --e2e-analysis N --e2e-planner N
//   --e2e-executor N --e2e-verifier N --e2e-generator N --e2e-rank R --e2e-temperature X --e2e-micro-batch N
//   --e2e-context N --fixtures DIR]
// Models: the fixtures (../shared/fixtures, or --fixtures DIR), and Qwen2.5 shapes with random values,
// qwen2.5-0.5b and qwen2.5-1.5b (f16) and their -q4 twins (not in the default set: name them).
// The planner runtime's speed and memory, printed as JSON on stdout (progress on stderr):
// - speed: scoring, prefill (the whole --prompt, no KV-cache reuse: prefill-timing.ts) and decode tokens/s. Decode bytes/s is weight bytes x decode tokens/s: every
//   decode step reads every weight once, so it shows how close decode runs to the memory bandwidth; with
//   --bandwidth (the GPU's GB/s) the decode speed is also given as a fraction of the bandwidth floor.
// - memory: what a generate() at --context positions (default 4096) holds at its peak, reserved with
//   Qwen2Runtime.reserve(): weights, a rank --lora-rank adapter on all 7 targets, the KV cache and the
//   largest activation plans (a prefill chunk of --batch-rows rows, default the planner's 512, and the
//   decode plan), cross-checked against the storage buffers the device really holds.
// - train: one real Flow-GRPO step (the planner worker's trainer classes) on a group of --train-seqs turns
//   of --train-tokens tokens: step time, training tokens/s and peak GPU memory; q4/f16 step-time ratios.
// - e2e (not in the default parts): whole Flow-GRPO steps of a training run as `cli train` wires one (bench/e2e.ts):
//   one query a step, a group of --e2e-group rollouts (8) of the AgentFlow loop, --e2e-concurrency (8) at once,
//   --e2e-turns planner turns each (3), every module call generating exactly its --e2e-<module> new tokens
//   (analysis 64, planner 96, executor 48, verifier 24, generator 64; end-of-sequence ignored) with a scripted
//   text the loop accepts and a scripted tool, so the time is the engine's; a fresh rank --e2e-rank (16) LoRA
//   adapter on all 7 targets, the planner sampling at --e2e-temperature (0.01, see below). After --e2e-warmup
//   untimed steps (1), --e2e-steps timed ones (1): step, rollout and update seconds, per-module call and
//   runtime time, the planner's decode steps and sequences per step, trained tokens, GPU memory peak. The
//   prompts' token ids come from bench/chunk-tokenizer.ts (random weights have no tokenizer). Same defaults
//   everywhere: the fixtures finish on lavapipe, the 0.5B shapes need a GPU. Temperature: a run samples at 1,
//   but random weights give flat logits rows (the shaped models' tiled values even tie), so at 1 most GPU draws
//   cannot decide and are redone on the CPU with a sort of the whole row, which a trained model's peaked rows
//   rarely need (shaped 0.5B q4 on lavapipe, 8 new tokens: decode 21.8 s at 1, 16.4 s at 0.1, both with
//   redraws; 6.1 s at 0.01, none). At 0.01 the draws run the same kernels and decide on the GPU; the update
//   does not depend on it. Each module's redrawn tokens are reported; --e2e-temperature 1 measures the worst case.
// On software adapters (lavapipe) the speed and training defaults are a few tokens only. The -q4 models are
// web-llm q4f16_1 builds kept 4-bit on the GPU (the same download web-llm uses).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { directorySource } from '../src/io/sources';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { Qwen2Runtime } from '../src/engine/runtime';
import { expectedQwen2Tensors } from '../src/io/qwen2-config';
import type { GpuMemoryReport } from '../src/engine/runtime';
import type { Q4WeightSource, WeightSource } from '../src/model/weights';
import { BufferTracker } from './buffer-tracker';
import { contextMemory, type ContextMemory } from './memory';
import { bandwidthFloor, batchBandwidthFloor, type BandwidthFloor, type BatchBandwidthFloor } from './floor';
import { batchLayout } from '../src/engine/batch-layout';
import { canFuseDecode } from '../src/model/decode-forward';
import { QWEN25_05B, QWEN25_15B, shapedQ4Weights, shapedWeights } from './shaped-model';
import { benchTraining, type TrainBenchOptions, type TrainResult } from './train';
import { benchE2e, type E2eOptions, type E2eResult } from './e2e';
import { flag, log } from './flags';
import { timedGenerate } from './prefill-timing';

/** A numeric flag, checked: a typo must not silently become NaN in the results. */
function num(name: string, fallback: string, min = 1): number {
  const v = Number(flag(name, fallback));
  if (!Number.isFinite(v) || v < min) throw new Error(`--${name} must be a number >= ${min}, got '${flag(name, fallback)}'`);
  return v;
}

interface SpeedResult {
  promptTokens: number;
  prefillMs: number;
  prefillTokensPerSec: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokensPerSec: number;
  decodeWeightBytesPerSec: number;
  /**
   * Decode tokens/s sampling as training rollouts do (temperature 1, no top-k / top-p), and how many of
   * those tokens the GPU draw left to the CPU (past the top-64 candidates' mass: random weights give flat
   * rows, so this is a worst case).
   */
  sampledDecodeTokensPerSec: number;
  sampledRedrawnTokens: number;
  /**
   * generateBatch of maxDecodeRows prompts (a Flow-GRPO group's rollouts decoded together, greedy like
   * decodeTokensPerSec), as one batch: `distinct` prompts share nothing; `group` prompts share all but
   * their last GROUP_TAIL tokens, as a group's planner turns share the system prompt, tools and query (on
   * the fused 4-bit decode that head is stored once: sharedPromptTokens).
   */
  batchDecode: { distinct: BatchDecode; group: BatchDecode };
  /** score() over `scoreSequences` packed sequences of promptTokens each (the trainer's forward). */
  scoreSequences: number;
  scoreMs: number;
  scoreTokensPerSec: number;
  /** What the runtime holds after these runs (its KV cache is sized for this prompt + decode only). */
  gpuMemory: GpuMemoryReport;
  bandwidthFloor?: BandwidthFloor;
}

interface BatchDecode {
  sequences: number;
  /** Prompt tokens stored once for all the sequences (batch-layout.ts; 0: each region is whole). */
  sharedPromptTokens: number;
  /** New tokens after each sequence's first, over the batch's decode time (its longest sequence's). */
  tokens: number;
  ms: number;
  tokensPerSec: number;
  /** tokensPerSec as a multiple of decodeTokensPerSec (one sequence). */
  speedup: number;
  steps: number;
  rowsPerStep: number;
  /** With --bandwidth: the aggregate tokens/s against the batch's floor (weights read once per step). */
  bandwidthFloor?: BatchBandwidthFloor;
}

/** Tokens at the end of a `group` prompt that differ between the sequences (each rollout's own last turn). */
const GROUP_TAIL = 16;

interface ModelResult {
  model: string;
  params: number;
  weightBytes: number;
  speed?: SpeedResult;
  memoryAtContext?: ContextMemory;
  training?: TrainResult;
  e2e?: E2eResult;
}

interface Model {
  key: string;
  name: string;
  config: Qwen2Config;
  /** Made on each call: a source may be read once per upload. */
  tensors: () => Promise<WeightSource | Q4WeightSource>;
}

/** The shaped models by key: Qwen2.5 shapes with random values, f16 or web-llm's q4f16_1 (bench/shaped-model.ts). */
const SHAPED: Record<string, { label: string; config: Qwen2Config }> = { 'qwen2.5-0.5b': { label: 'Qwen2.5-0.5B', config: QWEN25_05B }, 'qwen2.5-1.5b': { label: 'Qwen2.5-1.5B', config: QWEN25_15B } };
// The default set stays the fixtures and 0.5B: the 1.5B shapes are asked for by name (--models).
const MODELS = ['fixture', 'fixture-q4', 'qwen2.5-0.5b', 'qwen2.5-0.5b-q4'];
const ALL_MODELS = ['fixture', 'fixture-q4', ...Object.keys(SHAPED).flatMap((k) => [k, `${k}-q4`])];

async function model(key: string): Promise<Model> {
  const fixture = async (dir: string, name: string): Promise<Model> => {
    // --fixtures DIR: where the fixture checkpoints are when the script runs from elsewhere (a bundled copy).
    const path = resolve(flag('fixtures', resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures')), dir);
    const ckpt = await loadCheckpoint(directorySource(path));
    return { key, name, config: ckpt.config, tensors: async () => (await loadCheckpoint(directorySource(path))).tensors };
  };
  if (key === 'fixture') return fixture('qwen2-tiny', 'qwen2-tiny (fixture)');
  if (key === 'fixture-q4') return fixture('qwen2-tiny-q4f16_1-MLC', 'qwen2-tiny-q4f16_1-MLC (fixture, 4-bit)');
  const q4 = key.endsWith('-q4');
  const shaped = SHAPED[q4 ? key.slice(0, -3) : key];
  if (!shaped) throw new Error(`--models: unknown model '${key}' (${ALL_MODELS.join(', ')})`);
  const { label, config } = shaped;
  if (q4) return { key, name: `${label} shapes, q4f16_1 (random values)`, config, tensors: async () => shapedQ4Weights(config) };
  return { key, name: `${label} shapes, f16 (random values)`, config, tensors: async () => shapedWeights(config) };
}

async function speed(rt: Qwen2Runtime, m: Model, prompt: number, decode: number, scoreSeqs: number, bandwidth: number | null, context: number): Promise<SpeedResult> {
  const config = m.config;
  const ids = Array.from({ length: prompt }, (_, i) => (i * 7919 + 13) % config.vocabSize);
  // The whole prompt prefilled, after a warm-up that compiled every pipeline it runs (prefill-timing.ts).
  const out = await timedGenerate(rt, ids, decode);
  // The first new token comes from the prefill's logits; each further one is one decode step.
  const steps = Math.max(0, out.tokens.length - 1);
  const decodeTps = steps > 0 ? steps / (out.decodeMs / 1000) : 0;
  const sampled = await rt.generate(ids, { maxNewTokens: decode, temperature: 1, seed: 1 });
  const sampledSteps = Math.max(0, sampled.tokens.length - 1);
  const V = config.vocabSize;
  const floorOf = (b: BatchDecode): BatchDecode =>
    bandwidth === null || b.rowsPerStep === 0
      ? b
      : { ...b, bandwidthFloor: batchBandwidthFloor(config, bandwidth, rt.weights.decodeBytes, { rowsPerStep: b.rowsPerStep, prompt, decodeSteps: b.steps, sharedPromptTokens: b.sharedPromptTokens }, b.tokensPerSec) };
  const distinct = floorOf(await batchDecode(rt, (j) => ids.map((id) => (id + 101 * j) % V), decode, decodeTps));
  const group = floorOf(await batchDecode(rt, (j) => ids.map((id, k) => (k < prompt - GROUP_TAIL ? id : (id + 101 * j) % V)), decode, decodeTps));
  const batch = { distinct, group };
  const seqs = Array.from({ length: scoreSeqs }, (_, j) => ids.map((id) => (id + j) % config.vocabSize));
  await rt.score(seqs);
  const s0 = performance.now();
  await rt.score(seqs);
  const scoreMs = performance.now() - s0;
  const r: SpeedResult = {
    promptTokens: prompt,
    prefillMs: out.prefillMs,
    prefillTokensPerSec: prompt / (out.prefillMs / 1000),
    decodeTokens: steps,
    decodeMs: out.decodeMs,
    decodeTokensPerSec: decodeTps,
    decodeWeightBytesPerSec: decodeTps * rt.weights.decodeBytes,
    sampledDecodeTokensPerSec: sampledSteps > 0 ? sampledSteps / (sampled.decodeMs / 1000) : 0,
    sampledRedrawnTokens: sampled.redrawnTokens,
    batchDecode: batch,
    scoreSequences: scoreSeqs,
    scoreMs,
    scoreTokensPerSec: (scoreSeqs * prompt) / (scoreMs / 1000),
    gpuMemory: rt.memory(),
  };
  if (bandwidth !== null) r.bandwidthFloor = bandwidthFloor(config, bandwidth, rt.weights.decodeBytes, prompt, steps, decodeTps, context);
  log(`${m.name}: score ${r.scoreTokensPerSec.toFixed(1)} tok/s, prefill ${r.prefillTokensPerSec.toFixed(1)} tok/s, decode ${r.decodeTokensPerSec.toFixed(2)} tok/s (${(r.decodeWeightBytesPerSec / 1e9).toFixed(2)} GB/s of weights), at T=1 ${r.sampledDecodeTokensPerSec.toFixed(2)} tok/s (${r.sampledRedrawnTokens} of ${sampled.tokens.length} redrawn on the CPU); ${distinct.sequences} sequences together ${distinct.tokensPerSec.toFixed(2)} tok/s (${distinct.speedup.toFixed(2)}x one), sharing a ${group.sharedPromptTokens}-token head ${group.tokensPerSec.toFixed(2)} tok/s${group.bandwidthFloor ? ` (${(100 * group.bandwidthFloor.fractionOfFloor).toFixed(2)} % of their floor)` : ''}`);
  return r;
}

/**
 * generateBatch over maxDecodeRows prompts (prompt(j) for sequence j; greedy) after a warm-up batch. The
 * runtime's batchContext must hold them as one batch: several batches run one after the other, and the
 * longest sequence's decode time would then be one batch's, not the call's (it throws instead).
 */
async function batchDecode(rt: Qwen2Runtime, prompt: (j: number) => number[], decode: number, oneTps: number): Promise<BatchDecode> {
  const reqs = Array.from({ length: rt.maxDecodeRows }, (_, j) => ({ prompt: prompt(j), options: { maxNewTokens: decode, temperature: 0 } }));
  const layout = batchLayout(reqs.map((r) => ({ prompt: r.prompt, rows: r.prompt.length + decode })), canFuseDecode(rt.weights));
  if (layout.rows > rt.batchContext) throw new Error(`bench: ${reqs.length} sequences need ${layout.rows} cache rows, over the runtime's batchContext ${rt.batchContext}: they would not run as one batch`);
  await rt.generateBatch(reqs.map((r) => ({ ...r, options: { ...r.options, maxNewTokens: 2 } })));
  const c0 = { ...rt.decodeCounters };
  const out = await rt.generateBatch(reqs);
  const tokens = out.reduce((a, g) => a + Math.max(0, g.tokens.length - 1), 0);
  // Every sequence's decode clock starts at its first token (all drawn in the batch's first round) and
  // stops when the batch returns: the longest is the batch's decode time.
  const ms = Math.max(...out.map((g) => g.decodeMs));
  const tokensPerSec = ms > 0 ? tokens / (ms / 1000) : 0;
  const steps = rt.decodeCounters.steps - c0.steps;
  return {
    sequences: reqs.length,
    sharedPromptTokens: layout.shared,
    tokens,
    ms,
    tokensPerSec,
    speedup: oneTps > 0 ? tokensPerSec / oneTps : 0,
    steps,
    rowsPerStep: steps > 0 ? (rt.decodeCounters.rows - c0.rows) / steps : 0,
  };
}

/** The e2e part's settings from its flags, checked before any model loads. */
function e2eOptions(): E2eOptions {
  const int = (name: string, fallback: string, min = 1): number => {
    const v = num(name, fallback, min);
    if (!Number.isInteger(v)) throw new Error(`--${name} must be an integer, got ${v}`);
    return v;
  };
  const group = int('e2e-group', '8', 2);
  // At most 8 rollouts at once, as a training run allows (MAX_ROLLOUT_CONCURRENCY).
  const concurrency = int('e2e-concurrency', String(Math.min(group, 8)));
  if (concurrency > 8) throw new Error(`--e2e-concurrency must be at most 8, got ${concurrency}`);
  return {
    group,
    turns: int('e2e-turns', '3'),
    concurrency,
    warmupSteps: int('e2e-warmup', '1', 0),
    steps: int('e2e-steps', '1'),
    lengths: {
      analysis: int('e2e-analysis', '64'),
      planner: int('e2e-planner', '96'),
      executor: int('e2e-executor', '48'),
      verifier: int('e2e-verifier', '24'),
      generator: int('e2e-generator', '64'),
    },
    rank: int('e2e-rank', '16'),
    temperature: num('e2e-temperature', '0.01', Number.MIN_VALUE),
    microBatchTokens: int('e2e-micro-batch', '2048', 2),
    maxContext: int('e2e-context', '4096', 64),
  };
}

async function main(): Promise<void> {
  const ctx: GpuContext = await requestGpu();
  const soft = ctx.caps.isSoftware;
  // Counts every buffer the device makes, to check what the runtime reports about its memory.
  const tracker = BufferTracker.install(ctx.device);
  const keys = flag('models', MODELS.join(',')).split(',');
  const parts = new Set(flag('parts', 'speed,memory,train').split(','));
  for (const p of parts) if (!['speed', 'memory', 'train', 'e2e'].includes(p)) throw new Error(`--parts: unknown part '${p}' (speed, memory, train, e2e)`);
  const e2e = parts.has('e2e') ? e2eOptions() : null;
  const context = num('context', '4096');
  const batchRows = num('batch-rows', '512');
  const loraRank = num('lora-rank', '16', 0);
  const bandwidth = process.argv.includes('--bandwidth') ? num('bandwidth', '', Number.MIN_VALUE) : null;
  const device = { description: ctx.caps.description, vendor: ctx.caps.vendor, f16: ctx.caps.f16, software: soft };
  const options = { context, batchRows, loraRank, bandwidthGBs: bandwidth };
  // Each model's result is listed as soon as it starts and filled part by part, so that a time limit's
  // SIGTERM (run.sh all, bench/gpu-all.ts) still prints the parts that finished.
  const results: ModelResult[] = [];
  process.once('SIGTERM', () => {
    log('bench: SIGTERM, printing the parts finished so far');
    process.stdout.write(`${JSON.stringify({ interrupted: 'SIGTERM', device, options, results }, null, 2)}\n`, () => process.exit(143));
  });
  for (const key of keys) {
    const m = await model(key);
    const tiny = key.startsWith('fixture');
    const params = [...expectedQwen2Tensors(m.config).values()].reduce((a, shape) => a + shape.reduce((x, y) => x * y, 1), 0);
    const r: ModelResult = { model: m.name, params, weightBytes: 0 };
    results.push(r);
    if (parts.has('speed')) {
      // On software adapters 4 prompt rows keep prefill on the matmul row kernel (minutes, not tens of).
      const prompt = num('prompt', tiny ? '32' : soft ? '4' : '128');
      const decode = num('decode', tiny ? '32' : soft ? '3' : '64');
      const scoreSeqs = tiny || !soft ? 8 : 1;
      const t0 = performance.now();
      const rt = await Qwen2Runtime.create(ctx, m.config, await m.tensors(), { maxContext: prompt + decode + 8, batchContext: 8 * (prompt + decode + 8), maxBatchRows: Math.max(prompt * scoreSeqs, 8) });
      log(`${m.name}: uploaded ${(rt.weights.bytes / 2 ** 20).toFixed(1)} MiB in ${(performance.now() - t0).toFixed(0)} ms`);
      try {
        r.weightBytes = rt.weights.bytes;
        r.speed = await speed(rt, m, prompt, decode, scoreSeqs, bandwidth, context);
      } finally {
        rt.destroy();
      }
    }
    if (parts.has('memory')) {
      r.memoryAtContext = await contextMemory(ctx, m.config, await m.tensors(), { context, batchRows, rank: loraRank }, tracker);
      r.weightBytes = r.memoryAtContext.bytes.weights;
      log(`${m.name}: a generate at ${context} context holds ${r.memoryAtContext.totalMiB.toFixed(1)} MiB (device: ${(r.memoryAtContext.deviceStorageBytes / 2 ** 20).toFixed(1)} MiB)`);
    }
    if (parts.has('train')) {
      // On software adapters a training step of 4 rows of Qwen2.5-0.5B takes minutes; on a GPU, a group of
      // 8 planner turns of 512 tokens (128 of them response) in the trainer's default 768-token micro-batches.
      const tokens = num('train-tokens', tiny ? '32' : soft ? '2' : '512', 2);
      const o: TrainBenchOptions = {
        sequences: num('train-seqs', soft && !tiny ? '2' : '8', 2),
        tokens,
        response: num('train-response', tiny ? '16' : soft ? '1' : '128'),
        rank: num('train-rank', '16'),
        microBatchTokens: num('micro-batch', tiny ? '256' : soft ? String(2 * tokens) : '768', 2),
        warmupSteps: num('train-warmup', soft ? '0' : '1', 0),
        maxBatchRows: batchRows,
      };
      r.training = await benchTraining(ctx, m.name, m.config, await m.tensors(), o, log);
      r.weightBytes ||= r.training.runtimeMemory.weights;
    }
    if (e2e) {
      r.e2e = await benchE2e(ctx, m.name, m.config, await m.tensors(), e2e, log);
      r.weightBytes ||= r.e2e.runtimeMemory.weights;
    }
  }
  // Training should be no slower on the 4-bit base than on f16 (issue 7): the ratio per pair that ran.
  const trainingQ4VsF16: Array<{ f16: string; q4: string; stepTimeRatio: number }> = [];
  for (const [f, q] of [['fixture', 'fixture-q4'], ...Object.keys(SHAPED).map((k) => [k, `${k}-q4`])]) {
    const a = results[keys.indexOf(f)]?.training;
    const b = results[keys.indexOf(q)]?.training;
    if (a && b) trainingQ4VsF16.push({ f16: a.model, q4: b.model, stepTimeRatio: b.trainStepMs / a.trainStepMs });
  }
  process.stdout.write(`${JSON.stringify({ device, options, results, trainingQ4VsF16 }, null, 2)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  log(`bench failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
