// A run's module calls as the chat follows them: each call's clock (time to the first token, pieces
// streamed), its numbers once it ends, which call comes next, and which stored conversations are the user's
// own questions rather than an experiment's items or a training run's rollouts. Pure functions.
import type { ModuleName } from '../../agent/prompts';
import { nextModule, stateFromSteps } from '../../agent/phases';
import type { CallUsage, ConversationRecord, StepRecord } from '../../store/records';

/** One module call in progress, in performance.now() milliseconds. */
export interface CallClock {
  startedAt: number;
  firstTokenAt: number | null;
  lastTokenAt: number | null;
  /** Streamed pieces so far (web-llm and the planner stream about one token a piece). */
  pieces: number;
  /** The prompt's length in tokens, where the engine can count it: reading it is the wait before the first token. */
  promptTokens?: number;
}

export interface CallStat {
  module: ModuleName;
  turn: number;
  ms: number;
  firstTokenMs: number | null;
  tokens: number;
  /** True when the engine counted the tokens; false when they are the streamed pieces (about one a token). */
  exact: boolean;
  tokensPerSecond: number | null;
  /** The prompt's tokens and how many of them the engine reused from its cache, where it reported them. */
  promptTokens?: number;
  cachedPromptTokens?: number;
  /** How a call ended that left no step of its own kind: its reply could not be used, or the engine failed. */
  outcome?: 'unusable' | 'failed';
}

/**
 * The module call a stored step ends, or null for none. An error step ends one too: a planner reply that
 * could not be used is stored as an error, and leaving those out hid every call of a planner that had not
 * yet learnt the reply format (issue 28: never listed, even at turn 5).
 */
export function callOfStep(step: StepRecord): { module: ModuleName; outcome?: CallStat['outcome'] } | null {
  if (step.kind !== 'error') return { module: step.kind };
  const m = step.data.module;
  if (!['analysis', 'planner', 'executor', 'verifier', 'generator'].includes(m)) return null;
  return { module: m, outcome: step.data.errorKind === 'unusable-output' ? 'unusable' : 'failed' };
}

export function startCall(now: number): CallClock {
  return { startedAt: now, firstTokenAt: null, lastTokenAt: null, pieces: 0 };
}

export function tokenArrived(c: CallClock, now: number): CallClock {
  return { ...c, firstTokenAt: c.firstTokenAt ?? now, lastTokenAt: now, pieces: c.pieces + 1 };
}

export function streamedRate(c: CallClock): number | null {
  if (c.firstTokenAt === null || c.lastTokenAt === null || c.pieces < 2 || c.lastTokenAt <= c.firstTokenAt) return null;
  return (c.pieces - 1) / ((c.lastTokenAt - c.firstTokenAt) / 1000);
}

/**
 * A finished call: its stored step's token count and decode time when the engine reported them (the
 * planner does), else what streamed. The executor's time includes running its tool.
 */
export function callStat(module: ModuleName, turn: number, c: CallClock, now: number, step?: StepRecord, outcome?: CallStat['outcome']): CallStat {
  const d: CallUsage = step?.data ?? {};
  const counted = typeof d.completionTokenCount === 'number' && d.completionTokenCount > 0 ? d.completionTokenCount : null;
  const decodeMs = d.timings?.decodeMs;
  const rate = counted !== null && typeof decodeMs === 'number' && decodeMs > 0 ? counted / (decodeMs / 1000) : streamedRate(c);
  return {
    module,
    turn,
    ms: Math.max(0, now - c.startedAt),
    firstTokenMs: c.firstTokenAt === null ? null : c.firstTokenAt - c.startedAt,
    tokens: counted ?? c.pieces,
    exact: counted !== null,
    tokensPerSecond: rate,
    ...(typeof d.promptTokenCount === 'number' && d.promptTokenCount > 0 ? { promptTokens: d.promptTokenCount } : {}),
    ...(typeof d.timings?.cachedPromptTokens === 'number' && d.timings.cachedPromptTokens > 0 ? { cachedPromptTokens: d.timings.cachedPromptTokens } : {}),
    ...(outcome ? { outcome } : {}),
  };
}

/**
 * The module call that follows `step`, and its turn (null after the answer): said before its first token.
 * With the run's `maxTurns`, the last turn's tool call is followed by the answer: the loop asks no verifier
 * whose verdict could change nothing.
 */
export function nextCall(step: StepRecord, maxTurns = Infinity): { module: ModuleName; turn: number } | null {
  if (step.kind === 'executor' && step.turn >= maxTurns) return { module: 'generator', turn: step.turn };
  const module = nextModule(step);
  if (!module) return null;
  // The analysis opens turn 1; a verifier's CONTINUE opens the next turn.
  const turn = step.kind === 'analysis' ? 1 : step.kind === 'verifier' && module === 'planner' ? step.turn + 1 : step.turn;
  return { module, turn };
}

/**
 * The module call a run makes next after its stored `steps`, by the loop's own rules (agent/phases.ts), and
 * its turn; null once answered. Unlike nextCall it follows failed calls too (an unusable plan goes on to the
 * next turn's planner), and it says where a resumed run picks up.
 */
export function upcomingCall(steps: StepRecord[], maxTurns = Infinity): { module: ModuleName; turn: number } | null {
  const s = stateFromSteps(steps);
  switch (s.phase) {
    case 'analysis':
      return { module: 'analysis', turn: 0 };
    case 'plan':
      return s.turn > maxTurns ? { module: 'generator', turn: Math.min(s.turn, maxTurns) } : { module: 'planner', turn: s.turn };
    case 'execute':
      return { module: 'executor', turn: s.turn };
    case 'verify':
      return s.turn >= maxTurns ? { module: 'generator', turn: s.turn } : { module: 'verifier', turn: s.turn };
    case 'generate':
      return { module: 'generator', turn: Math.min(s.turn, maxTurns) };
    default:
      return null;
  }
}

export type ConversationGroup = 'chat' | 'experiment' | 'training';

/**
 * Where a stored conversation came from: a training rollout (settings.training / rollouts), an experiment's
 * item (settings.experiment, or, stored before that was recorded, a reference answer: chat questions have
 * none), or the user's own question.
 */
export function conversationGroup(c: ConversationRecord): ConversationGroup {
  const s = c.settings ?? {};
  if (s.training === true || (s.rollouts !== null && s.rollouts !== undefined)) return 'training';
  if (s.experiment !== undefined || c.reference !== undefined) return 'experiment';
  return 'chat';
}
