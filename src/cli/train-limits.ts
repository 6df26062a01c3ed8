// What a `cli train` run may ask for, checked before anything is written: a run that cannot fit dies hours
// later (or at once, out of memory) with its run.json claiming it is running. The bounds are far above any
// useful setting; the memory estimate is what a step holds in the V8 heap.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import { parseQwen2Config, type Qwen2Config } from '../io/qwen2-config';
import { parseMlcChatConfig } from '../io/mlc';
import { UsageError } from './args';

/** A million steps is years of agent rollouts; more is a slip of the keyboard. */
export const MAX_STEPS = 1_000_000;
/** Group advantages are already well estimated at 16-64 rollouts; the reference recipe uses 8. */
export const MAX_GROUP = 256;
/** LoRA ranks beyond a few hundred cost full fine-tuning's memory without its simplicity. */
export const MAX_RANK = 256;
/** The RNG's seed is a uint32. */
export const MAX_SEED = 2 ** 32 - 1;

/**
 * Heap bytes a step keeps per token of a planner turn until it is trained on and written: token ids and
 * logprobs as JS numbers (8 B each, several copies: rollout, sample, record), the chat messages' text
 * (UTF-16) and the rollouts.jsonl line built from them (decimal ids and text again). An estimate from what is
 * kept, rounded up, not a measurement: it separates a sane setting from an impossible one.
 */
export const STEP_BYTES_PER_TOKEN = 256;

/** The share of the heap limit a step's rollouts may take: the model, tools and GC need the rest. */
const HEAP_SHARE = 0.5;

export interface StepShape {
  groupSize: number;
  queriesPerStep: number;
  maxTurns: number;
  /** The longest planner turn (prompt + response) a step can train on. */
  turnTokens: number;
}

/** Heap bytes a step's rollouts need at most (all planner turns of every rollout of every query). */
export function stepHeapBytes(s: StepShape): number {
  return s.groupSize * s.queriesPerStep * s.maxTurns * s.turnTokens * STEP_BYTES_PER_TOKEN;
}

const gb = (bytes: number) => `${(bytes / 2 ** 30).toFixed(bytes < 2 ** 30 ? 2 : 1)} GB`;

/** Refuses a step whose rollouts would not fit in `heapLimit` (default: this process's V8 heap limit). */
export function checkStepMemory(s: StepShape, heapLimit = getHeapStatistics().heap_size_limit): void {
  const need = stepHeapBytes(s);
  const budget = heapLimit * HEAP_SHARE;
  if (need <= budget) return;
  throw new UsageError(
    `a step would hold about ${gb(need)} of rollouts in memory (--group ${s.groupSize} × --queries-per-step ${s.queriesPerStep} × --max-turns ${s.maxTurns} ` +
      `× ${s.turnTokens} tokens per planner turn (--micro-batch-tokens, at most the model's context) × ~${STEP_BYTES_PER_TOKEN} B), more than half of this process's heap limit ` +
      `(${gb(heapLimit)}); lower one of them, or raise the limit with NODE_OPTIONS=--max-old-space-size=MB`,
  );
}

/** The model's width (hidden size) and context, from its config alone (the weights load later). */
export function modelShape(dir: string): Pick<Qwen2Config, 'hiddenSize' | 'maxPositionEmbeddings'> {
  const hf = join(dir, 'config.json');
  const mlc = join(dir, 'mlc-chat-config.json');
  const file = existsSync(hf) ? hf : existsSync(mlc) ? mlc : null;
  if (!file) throw new UsageError(`--model ${dir} has neither config.json (Hugging Face) nor mlc-chat-config.json (MLC)`);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`${file} is not valid JSON (${(e as Error).message})`);
  }
  try {
    return file === hf ? parseQwen2Config(json, file) : parseMlcChatConfig(json, file).config;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** A LoRA rank is at most the width it factorises (a rank above it adds nothing but cost). */
export function checkRank(rank: number, hiddenSize: number, model: string): void {
  const max = Math.min(hiddenSize, MAX_RANK);
  if (rank > max) throw new UsageError(`--rank must be at most ${max} (${rank > hiddenSize ? `${model}'s hidden size is ${hiddenSize}` : `the largest rank cli train allows`}), got ${rank}`);
}
