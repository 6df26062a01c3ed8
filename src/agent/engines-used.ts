// Which engines a stored run used, so a resumed run can tell when the engines changed under it and the UI
// can label answers no model wrote.
import { servesAllModules } from '../engine/base-model-view';
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { AgentEngines } from './loop';

/** Stored in a conversation's settings.engines when its run starts. */
export interface EnginesUsed {
  planner: string;
  shared: string;
  /** Some module ran on a scripted engine (the demo): its text was not written by a model. */
  scripted: boolean;
}

export function enginesUsed(e: AgentEngines): EnginesUsed {
  // One planner serving every module (its frozen modules through a base-model view) is one engine.
  return { planner: e.planner.id, shared: servesAllModules(e) ? e.planner.id : e.shared.id, scripted: isScripted(e) };
}

/** True when any of the engines replays scripted replies (ChatEngine.scripted): the scripted demo. */
export function isScripted(e: AgentEngines | null | undefined): boolean {
  return !!e && (!!e.planner.scripted || !!e.shared.scripted);
}

/** The engines as a person reads them: 'the scripted demo', 'planner:x (all modules)' or 'planner:x + web-llm:y'. */
export function describeEngines(e: EnginesUsed): string {
  if (e.scripted) return `the scripted demo (${e.planner === e.shared ? e.planner : `${e.planner} + ${e.shared}`})`;
  return e.planner === e.shared ? `${e.planner} (all modules)` : `${e.planner} + ${e.shared}`;
}

/** settings.engines of a stored run, or null for runs stored before engines were recorded. */
export function storedEngines(settings: Record<string, unknown> | undefined): EnginesUsed | null {
  const e = settings?.engines as Partial<EnginesUsed> | undefined;
  if (!e || typeof e.planner !== 'string' || typeof e.shared !== 'string') return null;
  return { planner: e.planner, shared: e.shared, scripted: e.scripted === true };
}

/** Resuming would continue a run on other engines than it started with; the caller must ask the user. */
export class EngineMismatchError extends AgentFlowError {
  override readonly category: ErrorCategory = 'engine-mismatch';
  constructor(
    readonly conversationId: string,
    readonly started: EnginesUsed,
    readonly now: EnginesUsed,
  ) {
    super(`This run started on ${describeEngines(started)}; the engines now are ${describeEngines(now)}. Resume it on these only if you mean to mix them.`);
    this.name = 'EngineMismatchError';
  }
}
