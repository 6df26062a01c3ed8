// A run of the agent tied to storage: the conversation record, its steps written as they complete, planner
// calls recorded as rollouts, and, when the query has a reference answer, the reward scored and broadcast.
import type { ChatEngine } from '../engine/chat-engine';
import { createConversation, getConversation, getSteps, idbStepSink, updateConversation } from '../store/conversations';
import type { ConversationRecord } from '../store/records';
import type { Tool } from '../tools/tool';
import { runAgent, type AgentConfigInput, type AgentEngines, type AgentRunResult, type PlannerCall, type RunAgentOptions } from './loop';
import type { ModuleName } from './prompts';
import { recordReward, rolloutRecorder, type RolloutIds } from './rollouts';
import { rewardAnswer, type RewardKind } from './rewards';
import { EngineMismatchError, enginesUsed, storedEngines } from './engines-used';

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
  onCallStart?: RunAgentOptions['onCallStart'];
  onStep?: (step: import('../store/records').StepRecord) => void;
  dbName?: string;
}

export interface SessionResult extends AgentRunResult {
  reward?: number;
}

/**
 * Starts a new stored conversation for `query` and runs it to the end (or until interrupted). `settings` adds
 * to what is recorded (the Experiments tab records its run there, so the chat lists the item apart).
 */
export async function startConversation(query: string, opts: SessionOptions & { id?: string; title?: string; settings?: Record<string, unknown> }): Promise<SessionResult> {
  const conv = await createConversation(
    {
      query,
      ...(opts.id ? { id: opts.id } : {}),
      ...(opts.title ? { title: opts.title } : {}),
      ...(opts.reward ? { reference: JSON.stringify(opts.reward.reference) } : {}),
      settings: { ...opts.settings, config: opts.config ?? {}, rollouts: opts.rollouts ?? null, rewardKind: opts.reward?.kind ?? null, engines: enginesUsed(opts.engines) },
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
    ...(opts.onCallStart ? { onCallStart: opts.onCallStart } : {}),
    resumeFrom: steps,
  });
  const patch: Partial<ConversationRecord> = { status: result.status };
  if (result.answer !== null) patch.answer = result.answer;
  if (result.status === 'done' && opts.reward && result.finalAnswer !== null) {
    // A chat session asks its judge about exact-match answers only.
    const judge = opts.reward.judge && opts.reward.kind === 'exact' ? { engine: opts.reward.judge, question: conv.query, signal: opts.signal } : undefined;
    const reward = await rewardAnswer({ kind: opts.reward.kind, prediction: result.finalAnswer, reference: opts.reward.reference, numbers: opts.reward.numbers, options: opts.reward.options }, judge);
    result.reward = reward;
    patch.reward = reward;
    if (opts.rollouts) await recordReward(opts.rollouts, conv.id, reward, opts.dbName);
  }
  await updateConversation(conv.id, patch, opts.dbName);
  return result;
}
