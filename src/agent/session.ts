// A run of the agent tied to storage: the conversation record, its steps written as they complete, planner
// calls recorded as rollouts, and, when the query has a reference answer, the reward scored and broadcast.
import type { ChatEngine, GenerationResult } from '../engine/types';
import { createConversation, getConversation, getSteps, idbStepSink, updateConversation } from '../store/conversations';
import type { ConversationRecord } from '../store/records';
import type { Tool } from '../tools/types';
import { runAgent, type AgentConfigInput, type AgentEngines, type AgentRunResult, type PlannerCall } from './loop';
import type { ModuleName } from './prompts';
import { recordReward, rolloutRecorder, type RolloutIds } from './rollouts';
import { judgeAnswer, scoreAnswer, type RewardKind } from './rewards';
import { EngineMismatchError, enginesUsed, storedEngines } from './engines-used';
import { checkConcurrency, concurrentRolloutConfig, runPlannerRollouts } from './rollout-pool';

export interface RewardSpec {
  kind: RewardKind;
  reference: unknown;
  numbers?: number[];
  options?: string[];
  /** Also ask this engine when the rule-based check says wrong (search answers phrased differently). */
  judge?: ChatEngine;
}

export interface SessionOptions {
  tools: Tool[];
  engines: AgentEngines;
  config?: AgentConfigInput;
  signal?: AbortSignal;
  /** Record planner calls for training under these ids. */
  rollouts?: RolloutIds;
  reward?: RewardSpec;
  onToken?: (module: ModuleName, turn: number, piece: string) => void;
  onStep?: (step: import('../store/records').StepRecord) => void;
  dbName?: string;
  /** See RunAgentOptions.sharedAnalysis (runGroup passes one per group). */
  sharedAnalysis?: Map<string, Promise<GenerationResult>>;
  /**
   * See RunAgentOptions.onPlannerDone (runGroup passes its rollout's). A reward judge asked afterwards is
   * not counted: if it is the planner engine, its call just runs without waiting for others.
   */
  onPlannerDone?: () => void;
}

export interface SessionResult extends AgentRunResult {
  reward?: number;
}

/** Starts a new stored conversation for `query` and runs it to the end (or until interrupted). */
export async function startConversation(query: string, opts: SessionOptions & { id?: string; title?: string }): Promise<SessionResult> {
  const conv = await createConversation(
    {
      query,
      ...(opts.id ? { id: opts.id } : {}),
      ...(opts.title ? { title: opts.title } : {}),
      ...(opts.reward ? { reference: JSON.stringify(opts.reward.reference) } : {}),
      settings: { config: opts.config ?? {}, rollouts: opts.rollouts ?? null, rewardKind: opts.reward?.kind ?? null, engines: enginesUsed(opts.engines) },
    },
    opts.dbName,
  );
  return continueConversation(conv, [], opts);
}

export interface ResumeOptions extends SessionOptions {
  /**
   * Continue even when the engines are not those the run started with (the user said so). The run then
   * records the engines it was resumed on in settings.resumedOn. Default false: an EngineMismatchError.
   */
  allowEngineChange?: boolean;
}

/**
 * Continues an interrupted conversation from its stored steps. Rejects with an EngineMismatchError, before
 * touching the run, when the engines differ from those it started with, unless opts.allowEngineChange.
 */
export async function resumeConversation(id: string, opts: ResumeOptions): Promise<SessionResult> {
  const conv = await getConversation(id, opts.dbName);
  if (!conv) throw new Error(`no conversation with id '${id}' to resume`);
  const started = storedEngines(conv.settings);
  const now = enginesUsed(opts.engines);
  const changed = !!started && (started.planner !== now.planner || started.shared !== now.shared || started.scripted !== now.scripted);
  if (changed && !opts.allowEngineChange) throw new EngineMismatchError(id, started, now);
  const steps = await getSteps(id, opts.dbName);
  const resumedOn = [...((conv.settings?.resumedOn as unknown[] | undefined) ?? []), now];
  const patch: Partial<ConversationRecord> = changed ? { status: 'running', settings: { ...conv.settings, resumedOn } } : { status: 'running' };
  return continueConversation(await updateConversation(id, patch, opts.dbName), steps, opts);
}

async function continueConversation(conv: ConversationRecord, steps: import('../store/records').StepRecord[], opts: SessionOptions): Promise<SessionResult> {
  const sink = idbStepSink(opts.dbName);
  const record = opts.rollouts ? rolloutRecorder(opts.rollouts, opts.dbName) : undefined;
  const result: SessionResult = await runAgent({
    conversationId: conv.id,
    query: conv.query,
    tools: opts.tools,
    engines: opts.engines,
    config: opts.config,
    signal: opts.signal,
    sink: {
      async write(step) {
        await sink.write(step);
        opts.onStep?.(step);
      },
    },
    ...(record ? { onPlannerCall: (c: PlannerCall) => record(c) } : {}),
    ...(opts.onToken ? { onToken: opts.onToken } : {}),
    ...(opts.sharedAnalysis ? { sharedAnalysis: opts.sharedAnalysis } : {}),
    ...(opts.onPlannerDone ? { onPlannerDone: opts.onPlannerDone } : {}),
    resumeFrom: steps,
  });
  const patch: Partial<ConversationRecord> = { status: result.status };
  if (result.answer !== null) patch.answer = result.answer;
  if (result.status === 'done' && opts.reward && result.finalAnswer !== null) {
    let reward = scoreAnswer({ kind: opts.reward.kind, prediction: result.finalAnswer, reference: opts.reward.reference, numbers: opts.reward.numbers, options: opts.reward.options });
    if (reward === 0 && opts.reward.judge && opts.reward.kind === 'exact') {
      const verdict = await judgeAnswer(opts.reward.judge, conv.query, result.finalAnswer, opts.reward.reference, opts.signal).catch(() => null);
      if (verdict === true) reward = 1;
    }
    result.reward = reward;
    patch.reward = reward;
    if (opts.rollouts) await recordReward(opts.rollouts, conv.id, reward, opts.dbName);
  }
  await updateConversation(conv.id, patch, opts.dbName);
  return result;
}

export interface GroupOptions extends Omit<SessionOptions, 'rollouts' | 'reward' | 'config' | 'onPlannerDone'> {
  runId: string;
  groupId: string;
  /** One agent config for every rollout, or rollout i's own (e.g. its sampling seed). */
  config?: AgentConfigInput | ((rollout: number) => AgentConfigInput);
  /**
   * How many rollouts run at once (default 1: one after another). With more, their planner calls reach the
   * planner engine together, and each rollout's time budget is multiplied by the number that run at once
   * (concurrentRolloutConfig says why); onStep and onToken then interleave several conversations (a step
   * names its conversation, a token piece does not).
   */
  concurrency?: number;
  /**
   * Ask the group's greedy query analysis once and give it to every rollout (RunAgentOptions.sharedAnalysis):
   * the same answer each would get, for one engine call instead of `size`.
   */
  shareAnalysis?: boolean;
}

/** A rollout of a group threw (a storage failure, a bad config); the group's other results are kept. */
export class GroupRolloutError extends Error {
  constructor(
    /** The first rollout (0-based) that threw. */
    readonly rollout: number,
    /** Every rollout's result by index: undefined where it threw or never started. */
    readonly results: Array<SessionResult | undefined>,
    groupId: string,
    cause: unknown,
  ) {
    super(`group '${groupId}': rollout ${rollout + 1} of ${results.length} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'GroupRolloutError';
  }
}

/**
 * A GRPO group: `size` runs of the same query, `concurrency` at a time, each stored as a conversation titled
 * '<groupId> #<i + 1>' with its planner calls under (runId, groupId) and its reward broadcast. Results are in
 * rollout order. When the signal aborts, no further run starts and the runs so far are returned (the running
 * ones end 'interrupted'). When a run throws, no further run starts, the running ones finish, and the call
 * rejects with a GroupRolloutError holding the others' results.
 */
export async function runGroup(query: string, reward: RewardSpec, size: number, opts: GroupOptions): Promise<SessionResult[]> {
  if (!Number.isInteger(size) || size < 1) throw new Error(`runGroup: group size must be a positive integer, got ${size}`);
  const { runId, groupId, config, concurrency = 1, shareAnalysis, ...rest } = opts;
  const sharedAnalysis = shareAnalysis ? new Map<string, Promise<GenerationResult>>() : undefined;
  checkConcurrency(concurrency, 'runGroup: concurrency');
  const outcomes = await runPlannerRollouts(
    size,
    concurrency,
    opts.engines.planner,
    (i, plannerDone) => {
      const own = concurrentRolloutConfig(typeof config === 'function' ? config(i) : config, size, concurrency);
      return startConversation(query, {
        ...rest,
        ...(own !== undefined ? { config: own } : {}),
        title: `${groupId} #${i + 1}`,
        ...(sharedAnalysis ? { sharedAnalysis } : {}),
        rollouts: { runId, groupId },
        reward,
        onPlannerDone: plannerDone,
      });
    },
    opts.signal,
  );
  const results: SessionResult[] = [];
  for (const o of outcomes) if (o.ok) results.push(o.value);
  const failed = outcomes.findIndex((o) => !o.ok);
  if (failed < 0) return results;
  const byRollout = Array.from({ length: size }, (_, i) => {
    const o = outcomes[i];
    return o?.ok ? o.value : undefined;
  });
  const first = outcomes[failed];
  throw new GroupRolloutError(failed, byRollout, groupId, first.ok ? null : first.error);
}
