// Planner-turn samples -> packed GPU batches (the row layout of src/kernels/LAYOUTS.md). Sequences are
// packed back to back without padding; row i of a sequence predicts token i+1, so a turn whose response is
// tokens[p .. len-1] (p = prompt length) has its loss on rows p-1 .. len-2. Everything per token (loss mask,
// advantage, old and reference logprobs) is laid out per row so that kernels index it by row.
import { valueText } from '../util/value-text';

/** One planner turn: the exact prompt ids fed to the model and the sampled response ids. */
export interface TurnSample {
  /** The query's group (all G rollouts of one query). */
  groupId: string;
  rolloutId: string;
  /** 0-based planner turn within the rollout. */
  turn: number;
  promptTokens: number[];
  responseTokens: number[];
  /** The rollout's final reward, broadcast to this turn. */
  reward: number;
  /** log p of each response token under the sampling policy, when recorded at sampling time. */
  oldLogprobs?: number[];
  /**
   * forced[k]: response token k was forced by the reply's grammar (jump-forward: the engine appended it, no
   * draw chose it). Forced tokens are no action of the policy, so they take no part in the loss (README,
   * "On-policy under masks"); they stay in the sequence as context.
   */
  forced?: boolean[];
  /**
   * choices[k]: the token ids the reply's grammar allowed where response token k was drawn, grouped by the
   * reply each leads to (two tokens spelling one tool name are one group), when they were few (a choice between
   * tools, not free text); null where there was no such choice. Only the entropy bonus over choices
   * (GrpoConfig.entropyOver) reads them.
   */
  choices?: Array<number[][] | null>;
  /** Weight of the entropy bonus on this turn's rows (GrpoConfig.entropyGroups); absent = 1. */
  entropyWeight?: number;
  /**
   * Group-normalised advantage: set by the training run when it builds the step's batch (and stored with the
   * turn); a batch whose samples all lack it gets it from grpoStep, by the same rule.
   */
  advantage?: number;
  /** log p of each response token with the adapter off; filled by the step. */
  refLogprobs?: number[];
}

export interface PackedSequence {
  /** Index of the sample in the list given to packBatch. */
  sample: number;
  /** First row of the sequence in the batch. */
  start: number;
  /** Rows (prompt + response tokens). */
  length: number;
  promptLen: number;
}

export interface PackedBatch {
  rows: number;
  ids: Uint32Array;
  pos: Uint32Array;
  /** [rows, 2]: causal key range [first row of the sequence, i + 1). */
  ranges: Uint32Array;
  /** Next-token id per row (0 on a sequence's last row, which predicts nothing). */
  targets: Uint32Array;
  /** 1 on rows that predict a response token. */
  lossMask: Float32Array;
  /** The rows with lossMask 1, ascending: the only rows whose logits are needed. */
  lossRows: Uint32Array;
  advantages: Float32Array;
  oldLogprobs: Float32Array;
  refLogprobs: Float32Array;
  seqs: PackedSequence[];
  /** Number of response tokens in the loss (= lossRows.length): forced tokens are not. */
  responseTokens: number;
  /** Per row, the entropy bonus's weight (TurnSample.entropyWeight); absent when no sample sets one (all 1). */
  entropyWeights?: Float32Array;
  /** Row -> the groups of ids its token was drawn from (TurnSample.choices), for rows in the loss that have them; absent when no sample has choices. */
  choices?: Map<number, Uint32Array[]>;
}

export function validateSample(s: TurnSample, i: number, vocabSize?: number): void {
  const where = `sample ${i} (rollout '${s.rolloutId}', turn ${s.turn})`;
  if (s.promptTokens.length < 1) throw new Error(`${where}: promptTokens is empty; a response needs at least one token of context`);
  if (s.responseTokens.length < 1) throw new Error(`${where}: responseTokens is empty`);
  for (const [name, arr] of [['promptTokens', s.promptTokens], ['responseTokens', s.responseTokens]] as const) {
    for (const t of arr) {
      if (!Number.isInteger(t) || t < 0 || (vocabSize !== undefined && t >= vocabSize)) {
        throw new Error(`${where}: ${name} holds token id ${t}, outside the vocabulary${vocabSize !== undefined ? ` (size ${vocabSize})` : ''}`);
      }
    }
  }
  if (s.forced && s.forced.length !== s.responseTokens.length) {
    throw new Error(`${where}: forced has ${s.forced.length} entries for ${s.responseTokens.length} response tokens`);
  }
  if (s.choices) {
    if (s.choices.length !== s.responseTokens.length) throw new Error(`${where}: choices has ${s.choices.length} entries for ${s.responseTokens.length} response tokens`);
    s.choices.forEach((groups, k) => {
      if (groups === null) return;
      if (groups.length < 2) throw new Error(`${where}: choices[${k}] holds ${groups.length} group(s) of tokens; a choice needs at least 2 (null where there was none)`);
      const seen = new Set<number>();
      for (const g of groups) {
        if (g.length < 1) throw new Error(`${where}: choices[${k}] holds an empty group`);
        for (const t of g) {
          if (!Number.isInteger(t) || t < 0 || (vocabSize !== undefined && t >= vocabSize)) throw new Error(`${where}: choices[${k}] holds token id ${t}, outside the vocabulary${vocabSize !== undefined ? ` (size ${vocabSize})` : ''}`);
          if (seen.has(t)) throw new Error(`${where}: choices[${k}] holds token id ${t} twice`);
          seen.add(t);
        }
      }
      if (!seen.has(s.responseTokens[k])) throw new Error(`${where}: choices[${k}] does not hold the token drawn there (${s.responseTokens[k]})`);
    });
  }
  for (const name of ['oldLogprobs', 'refLogprobs'] as const) {
    const lp = s[name];
    if (lp && lp.length !== s.responseTokens.length) {
      throw new Error(`${where}: ${name} has ${lp.length} entries for ${s.responseTokens.length} response tokens`);
    }
  }
}

/** Packs `samples` (or the subset `indices`) into one batch, in that order. */
export function packBatch(samples: readonly TurnSample[], indices: readonly number[] = samples.map((_, i) => i), vocabSize?: number): PackedBatch {
  let rows = 0;
  for (const i of indices) {
    validateSample(samples[i], i, vocabSize);
    rows += samples[i].promptTokens.length + samples[i].responseTokens.length;
  }
  const ids = new Uint32Array(rows);
  const pos = new Uint32Array(rows);
  const ranges = new Uint32Array(rows * 2);
  const targets = new Uint32Array(rows);
  const lossMask = new Float32Array(rows);
  const advantages = new Float32Array(rows);
  const oldLogprobs = new Float32Array(rows);
  const refLogprobs = new Float32Array(rows);
  const seqs: PackedSequence[] = [];
  const lossRows: number[] = [];
  const choices = indices.some((i) => samples[i].choices) ? new Map<number, Uint32Array[]>() : undefined;
  const entropyWeights = indices.some((i) => samples[i].entropyWeight !== undefined) ? new Float32Array(rows) : undefined;
  let start = 0;
  for (const si of indices) {
    const s = samples[si];
    const p = s.promptTokens.length;
    const tokens = [...s.promptTokens, ...s.responseTokens];
    const len = tokens.length;
    for (let t = 0; t < len; t++) {
      const row = start + t;
      ids[row] = tokens[t];
      pos[row] = t;
      ranges[2 * row] = start;
      ranges[2 * row + 1] = row + 1;
      targets[row] = t + 1 < len ? tokens[t + 1] : 0;
      if (t >= p - 1 && t < len - 1 && !s.forced?.[t - (p - 1)]) {
        const k = t - (p - 1); // index into the response
        lossMask[row] = 1;
        lossRows.push(row);
        advantages[row] = s.advantage ?? 0;
        oldLogprobs[row] = s.oldLogprobs?.[k] ?? 0;
        refLogprobs[row] = s.refLogprobs?.[k] ?? 0;
        const groups = s.choices?.[k];
        if (groups) choices!.set(row, groups.map((g) => Uint32Array.from(g)));
        if (entropyWeights) entropyWeights[row] = s.entropyWeight ?? 1;
      }
    }
    seqs.push({ sample: si, start, length: len, promptLen: p });
    start += len;
  }
  return { rows, ids, pos, ranges, targets, lossMask, lossRows: Uint32Array.from(lossRows), advantages, oldLogprobs, refLogprobs, seqs, responseTokens: lossRows.length, ...(choices ? { choices } : {}), ...(entropyWeights ? { entropyWeights } : {}) };
}

/**
 * Splits `indices` into micro-batches of at most `tokenBudget` rows each, in order, greedily. A sequence
 * longer than the budget gets a micro-batch of its own (attention needs all of it in one pass).
 */
export function microBatches(samples: readonly TurnSample[], indices: readonly number[], tokenBudget: number): number[][] {
  if (!Number.isInteger(tokenBudget) || tokenBudget < 1) throw new Error(`microBatches: tokenBudget must be a positive integer (got ${tokenBudget})`);
  const out: number[][] = [];
  let cur: number[] = [];
  let used = 0;
  for (const i of indices) {
    const len = samples[i].promptTokens.length + samples[i].responseTokens.length;
    if (cur.length && used + len > tokenBudget) {
      out.push(cur);
      cur = [];
      used = 0;
    }
    cur.push(i);
    used += len;
  }
  if (cur.length) out.push(cur);
  return out;
}

/**
 * Splits sample indices into `count` mini-batches by whole rollouts (all turns of a rollout stay together),
 * after shuffling rollouts with `random` (the trainer's seeded RNG, so a resumed run shuffles the same way).
 */
export function miniBatches(samples: readonly TurnSample[], count: number, random: () => number): number[][] {
  const rollouts = new Map<string, number[]>();
  samples.forEach((s, i) => {
    const key = `${s.groupId}\u0000${s.rolloutId}`;
    const l = rollouts.get(key);
    if (l) l.push(i);
    else rollouts.set(key, [i]);
  });
  const order = [...rollouts.values()];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  const n = Math.min(count, order.length);
  const out: number[][] = Array.from({ length: n }, () => []);
  order.forEach((r, k) => out[k % n].push(...r));
  return out;
}

/** The shared fixture's sample shape (expected.json `flowgrpo.samples`, and the CLI's batch file). */
export interface FixtureSample {
  tokens: number[];
  prompt_len: number;
  advantage: number;
  old_logprobs: number[];
  ref_logprobs?: number[];
}

const F32_MAX = 3.4028234663852886e38;

export function fromFixtureSamples(samples: readonly FixtureSample[], where = 'batch'): TurnSample[] {
  return samples.map((s, i) => {
    if (!Array.isArray(s.tokens) || !Number.isInteger(s.prompt_len) || s.prompt_len < 1 || s.prompt_len >= s.tokens.length) {
      throw new Error(`${where}: samples[${i}] needs 'tokens' (array) and 'prompt_len' (integer in 1..tokens.length-1)`);
    }
    // The GPU computes in float32: a value beyond its range would turn into an infinity there.
    if (typeof s.advantage !== 'number' || !(Math.abs(s.advantage) <= F32_MAX)) {
      throw new Error(`${where}: samples[${i}].advantage must be a finite number within float32's ±3.4e38, got ${valueText(s.advantage)}`);
    }
    const nResp = s.tokens.length - s.prompt_len;
    if (!Array.isArray(s.old_logprobs) || s.old_logprobs.length !== nResp) {
      throw new Error(`${where}: samples[${i}].old_logprobs must have ${nResp} entries (one per response token)`);
    }
    s.old_logprobs.forEach((lp, j) => {
      if (typeof lp !== 'number' || !(Math.abs(lp) <= F32_MAX)) throw new Error(`${where}: samples[${i}].old_logprobs[${j}] must be a finite number, got ${valueText(lp)}`);
    });
    return {
      groupId: 'batch',
      rolloutId: `sample-${i}`,
      turn: 0,
      promptTokens: s.tokens.slice(0, s.prompt_len),
      responseTokens: s.tokens.slice(s.prompt_len),
      reward: 0,
      advantage: s.advantage,
      oldLogprobs: s.old_logprobs,
      refLogprobs: s.ref_logprobs,
    };
  });
}
