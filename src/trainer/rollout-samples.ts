// Bridges between the agent's stored planner calls (RolloutRecord, src/agent/rollouts.ts) and the
// trainer's TurnSample, both ways: stored rollouts become a training batch, and trainer-made rollouts
// (the toy task) become records that the agent's JSONL export writes, advantages included.
import type { RolloutRecord } from '../store/records';
import { groupAdvantages } from './advantages';
import type { TurnSample } from './samples';

export interface SkippedRollout {
  id: string;
  reason: string;
}

/**
 * Planner calls with token ids and a reward, as turn samples (rollout = conversation). Calls without ids
 * (a planner on web-llm) or without a reward yet are skipped, each with its reason.
 */
export function samplesFromRollouts(records: readonly RolloutRecord[]): { samples: TurnSample[]; skipped: SkippedRollout[] } {
  const samples: TurnSample[] = [];
  const skipped: SkippedRollout[] = [];
  for (const r of records) {
    if (!r.promptTokens.length || !r.tokens.length) skipped.push({ id: r.id, reason: 'no token ids (sampled by an engine that does not expose them)' });
    else if (r.logprobs.length !== r.tokens.length) skipped.push({ id: r.id, reason: `${r.logprobs.length} logprobs for ${r.tokens.length} tokens` });
    else if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) skipped.push({ id: r.id, reason: 'no reward yet (the run has not finished)' });
    else {
      samples.push({ groupId: r.groupId, rolloutId: r.conversationId, turn: r.turn, promptTokens: [...r.promptTokens], responseTokens: [...r.tokens], reward: r.reward, oldLogprobs: [...r.logprobs] });
    }
  }
  return { samples, skipped };
}

/**
 * Turn samples as rollout records carrying the trainer's advantages (turn-level group normalisation), so
 * that src/agent/rollouts.ts's rolloutsToJsonl exports exactly what was trained on. Token ids stand in
 * for text where there is no tokenizer (the toy task).
 */
export function samplesToRolloutRecords(samples: readonly TurnSample[], runId: string, adapterId: string | null, createdAt = Date.now(), eps = 1e-6): RolloutRecord[] {
  const adv = groupAdvantages(samples, eps).advantages;
  return samples.map((s, i) => ({
    id: `${runId}:${s.rolloutId}:${s.turn}`,
    runId,
    groupId: s.groupId,
    conversationId: s.rolloutId,
    turn: s.turn,
    adapterId,
    promptTokens: [...s.promptTokens],
    tokens: [...s.responseTokens],
    logprobs: [...(s.oldLogprobs ?? [])],
    reward: s.reward,
    advantage: s.advantage ?? adv[i],
    prompt: `token ids: ${s.promptTokens.join(' ')}`,
    completion: `token ids: ${s.responseTokens.join(' ')}`,
    createdAt,
  }));
}
