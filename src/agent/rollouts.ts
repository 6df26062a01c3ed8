// Planner calls as training data (Flow-GRPO): the exact prompt token ids, sampled ids and their logprobs,
// the adapter that sampled them, the group (same query, several rollouts) and the run; the run's final
// reward is broadcast to every planner call of that conversation. Exported as JSONL for TRL/verl.
import type { RolloutRecord } from '../store/records';
import { groupAdvantages } from './advantages';
import { getRolloutsByRun, putRollout, setConversationReward } from '../store/rollout-store';
import type { PlannerCall } from './loop';

export interface RolloutIds {
  /** The collection this belongs to: a training run, an experiment, or 'chat'. */
  runId: string;
  /** Rollouts of the same query compared with each other (GRPO group). */
  groupId: string;
}

/** Stable per conversation and turn, so a planner call repeated after a reload replaces its record. */
export function rolloutId(runId: string, conversationId: string, turn: number): string {
  return `${runId}:${conversationId}:${turn}`;
}

/** One planner call as training data: what the update and the stored record need from it. */
export interface PlannerTurn {
  /** The loop's turn number (1-based in the agent; 0-based turns of the toy task are stored as given). */
  turn: number;
  promptTokens: number[];
  responseTokens: number[];
  /** log p of each response token under the sampling policy (temperature 1). */
  logprobs: number[];
  /** Under a reply schema: which response tokens the grammar forced (no draw: left out of the loss). */
  forced?: boolean[];
  /** Under a reply schema, where the engine records them: the few ids each drawn token was chosen from (GenerationResult.choices). */
  choices?: Array<number[][] | null>;
  /** The adapter that sampled the response (null: the base model). */
  adapterId: string | null;
  /** The chat messages the planner saw, when it is a chat model. */
  messages?: Array<{ role: 'system' | 'user' | 'assistant'; content: string }>;
  prompt: string;
  completion: string;
  engineId?: string;
  parsedOk?: boolean;
  finishReason?: 'stop' | 'length' | 'abort';
}

/** The one conversion of an agent's planner call into training data (chat recorder and training runs). */
export function plannerTurn(c: PlannerCall): PlannerTurn {
  const r = c.result;
  return {
    turn: c.turn,
    promptTokens: [...r.promptTokens],
    responseTokens: [...r.tokens],
    logprobs: [...r.logprobs],
    ...(r.forced ? { forced: [...r.forced] } : {}),
    ...(r.choices ? { choices: r.choices.map((c) => (c ? c.map((g) => [...g]) : null)) } : {}),
    adapterId: r.adapterId,
    messages: c.messages.map((m) => ({ role: m.role, content: m.content })),
    prompt: c.messages.map((m) => `${m.role}: ${m.content}`).join('\n\n'),
    completion: r.text,
    engineId: c.engineId,
    parsedOk: c.parsed.ok,
    finishReason: r.finishReason,
  };
}

/** The stored record of planner turn `t` of conversation `conversationId` (a training step adds its reward and advantage). */
export function rolloutRecord(t: PlannerTurn, ids: RolloutIds & { conversationId: string }, createdAt = Date.now()): RolloutRecord {
  return {
    id: rolloutId(ids.runId, ids.conversationId, t.turn),
    runId: ids.runId,
    groupId: ids.groupId,
    conversationId: ids.conversationId,
    turn: t.turn,
    adapterId: t.adapterId,
    promptTokens: [...t.promptTokens],
    tokens: [...t.responseTokens],
    logprobs: [...t.logprobs],
    prompt: t.prompt,
    completion: t.completion,
    createdAt,
    ...(t.messages ? { messages: t.messages.map((m) => ({ role: m.role, content: m.content })) } : {}),
    ...(t.engineId !== undefined ? { engineId: t.engineId } : {}),
    ...(t.parsedOk !== undefined ? { parsedOk: t.parsedOk } : {}),
    ...(t.finishReason !== undefined ? { finishReason: t.finishReason } : {}),
  };
}

export function rolloutFromPlannerCall(call: PlannerCall, ids: RolloutIds, createdAt = Date.now()): RolloutRecord {
  const r = call.result;
  if (r.tokens.length !== r.logprobs.length) {
    throw new Error(`planner engine '${call.engineId}' returned ${r.tokens.length} tokens but ${r.logprobs.length} logprobs`);
  }
  return rolloutRecord(plannerTurn(call), { ...ids, conversationId: call.conversationId }, createdAt);
}

/**
 * An onPlannerCall handler for runAgent that stores each call. A planner on web-llm has no token ids; its
 * calls are stored with empty ids (engineId says which engine) and the trainer skips them.
 */
export function rolloutRecorder(ids: RolloutIds, dbName?: string): (call: PlannerCall) => Promise<void> {
  return (call) => putRollout(rolloutFromPlannerCall(call, ids), dbName);
}

/** Broadcasts the run's final reward to all of its planner calls. */
export function recordReward(ids: RolloutIds, conversationId: string, reward: number, dbName?: string): Promise<number> {
  return setConversationReward(ids.runId, conversationId, reward, dbName);
}

/**
 * Advantages for records that were scored but not trained on (chat, experiments): the trainer's rule, over
 * each group's turns. Training runs store the advantage each turn was trained with.
 */
function advantagesOf(records: RolloutRecord[]): Map<string, number> {
  const rewarded = records.filter((r) => typeof r.reward === 'number' && typeof r.advantage !== 'number');
  const { advantages } = groupAdvantages(rewarded.map((r) => ({ groupId: r.groupId, reward: r.reward as number })));
  return new Map(rewarded.map((r, i) => [r.id, advantages[i]]));
}

export interface RolloutJsonLine {
  prompt: Array<{ role: string; content: string }>;
  completion: Array<{ role: 'assistant'; content: string }>;
  reward: number | null;
  advantage: number | null;
  group_id: string;
  run_id: string;
  conversation_id: string;
  turn: number;
  /** Training runs: the step that trained on it and the rollout's index in its group. */
  step?: number;
  rollout?: number;
  adapter_id: string | null;
  prompt_token_ids: number[];
  completion_token_ids: number[];
  logprobs: number[];
}

/**
 * JSONL, one planner call per line, in the conversational prompt/completion form TRL and verl read, with
 * token ids and sampling logprobs. Stored advantages are used; missing ones follow the trainer's rule.
 */
export function rolloutsToJsonl(records: RolloutRecord[]): string {
  const computed = advantagesOf(records);
  return records
    .map((r) => {
      const line: RolloutJsonLine = {
        prompt: r.messages ?? [{ role: 'user', content: r.prompt }],
        completion: [{ role: 'assistant', content: r.completion }],
        reward: typeof r.reward === 'number' ? r.reward : null,
        advantage: typeof r.advantage === 'number' ? r.advantage : (computed.get(r.id) ?? null),
        group_id: r.groupId,
        run_id: r.runId,
        conversation_id: r.conversationId,
        turn: r.turn,
        ...(r.step !== undefined ? { step: r.step } : {}),
        ...(r.rollout !== undefined ? { rollout: r.rollout } : {}),
        adapter_id: r.adapterId,
        prompt_token_ids: r.promptTokens,
        completion_token_ids: r.tokens,
        logprobs: r.logprobs,
      };
      return JSON.stringify(line);
    })
    .join('\n') + (records.length ? '\n' : '');
}

export async function exportRunJsonl(runId: string, dbName?: string): Promise<string> {
  return rolloutsToJsonl(await getRolloutsByRun(runId, dbName));
}
