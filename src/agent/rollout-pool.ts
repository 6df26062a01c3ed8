// Runs the rollouts of a GRPO group a few at a time, so their planner calls reach the planner engine
// together (and can be decoded as one batch). Rollout i is always started before rollout i + 1, and every
// outcome is kept at its rollout's index, so callers see the same order whatever finished first.
import type { ChatEngine } from '../engine/chat-engine';
import { CHAT_DEFAULTS, type AgentConfigInput } from './loop';

export type RolloutOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Throws unless `value` is a positive integer; `setting` names the option at fault in the message. */
export function checkConcurrency(value: number, setting: string): number {
  if (!Number.isInteger(value) || value < 1) throw new Error(`${setting} must be a positive integer, got ${value}`);
  return value;
}

/**
 * Runs run(0) .. run(count - 1) with at most `concurrency` in flight. No rollout starts once the signal has
 * aborted or once a rollout has thrown (as a sequential loop that stops at the first error would); the ones
 * already running are awaited, so none is left half-written when this returns. The outcomes are those of
 * the rollouts that started, which are always rollouts 0 .. k - 1, in rollout order.
 */
export async function runRollouts<T>(
  count: number,
  concurrency: number,
  run: (rollout: number) => Promise<T>,
  signal?: AbortSignal,
  /** Told how many rollouts are running whenever that changes (1 again at the end). */
  onRunning?: (n: number) => void,
): Promise<RolloutOutcome<T>[]> {
  checkConcurrency(concurrency, 'rollout concurrency');
  const outcomes: RolloutOutcome<T>[] = [];
  let next = 0;
  let failed = false;
  let running = 0;
  const lanes = Math.min(concurrency, count);
  // Whether another rollout will start after this one: then the running count stays where it is.
  const more = () => next < count && !failed && !signal?.aborted;
  if (lanes > 0) onRunning?.(lanes);
  const lane = async () => {
    while (more()) {
      const i = next++;
      running++;
      try {
        outcomes[i] = { ok: true, value: await run(i) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
        failed = true;
      }
      running--;
      if (!more() && running > 0) onRunning?.(running);
    }
  };
  try {
    await Promise.all(Array.from({ length: lanes }, lane));
  } finally {
    onRunning?.(1);
  }
  return outcomes;
}

/** What a rollout tells the pool about its planner calls (see runPlannerRollouts). */
export interface PlannerPresence {
  /** It will not call the planner again (RunAgentOptions.onPlannerDone). */
  done: () => void;
  /**
   * It is waiting for another rollout's call (the group's shared query analysis) and will not call the
   * planner until that one returns (RunAgentOptions.onPlannerWait).
   */
  waiting: (waiting: boolean) => void;
}

/**
 * runRollouts for agent rollouts whose planner calls go to `planner`: with more than one at a time, the
 * planner is told how many running rollouts may call it now (ChatEngine.expectConcurrentCalls; at least
 * 1, and 1 again at the end), so it holds each call until theirs meet it and decodes them together. A
 * rollout says when it will not call the planner again (`done`): one that is only answering would otherwise
 * make the planner hold every call for one that never comes, up to the batcher's wait limit each time; and
 * while it waits for another rollout's call (`waiting`), so that call is not held for it: the group's shared
 * analysis, on a planner that serves every module, would otherwise wait the whole limit for rollouts that are
 * waiting for it. A rollout taking a freed lane counts again.
 */
export function runPlannerRollouts<T>(
  count: number,
  concurrency: number,
  planner: ChatEngine,
  run: (rollout: number, presence: PlannerPresence) => Promise<T>,
  signal?: AbortSignal,
): Promise<RolloutOutcome<T>[]> {
  if (concurrency <= 1) return runRollouts(count, concurrency, (i) => run(i, { done: () => undefined, waiting: () => undefined }), signal);
  let running = 0;
  // Running rollouts that will not call the planner again, or not until another rollout's call returns.
  let finished = 0;
  let idle = 0;
  let told = 0;
  const tell = () => {
    const n = Math.max(1, running - finished - idle);
    if (n === told) return;
    told = n;
    planner.expectConcurrentCalls?.(n);
  };
  return runRollouts(
    count,
    concurrency,
    async (i) => {
      tell();
      let done = false;
      let waiting = false;
      try {
        return await run(i, {
          done: () => {
            if (done) return;
            done = true;
            finished++;
            if (waiting) {
              waiting = false;
              idle--;
            }
            tell();
          },
          waiting: (w) => {
            if (done || w === waiting) return;
            waiting = w;
            idle += w ? 1 : -1;
            tell();
          },
        });
      } finally {
        // Its lane is either taken by the next rollout (which tells) or reported free by runRollouts.
        if (done) finished--;
        if (waiting) idle--;
      }
    },
    signal,
    (n) => {
      running = n;
      tell();
    },
  );
}

/**
 * The agent config of one of `count` rollouts run `concurrency` at a time: its time budget (timeBudgetMs, or
 * the default) times the number that run at once, min(count, concurrency); unchanged when that is 1.
 *
 * Why: the budget is wall time from a rollout's start, and rollouts run together share engines that serve
 * one call at a time (web-llm) or hold a call for the others (the planner's batcher), so with c at once a
 * rollout may spend most of its time waiting for the others' calls. Cut by its budget it still answers, from
 * a shorter memory, and that answer's reward is trained on like any other: the group's comparison would then
 * punish waiting, not planning. Each rollout has one call in flight at a time and the engines serve calls in
 * arrival order, so a call waits for at most one call of each other rollout, and a rollout gets at least 1/c
 * of the engines' time while c run: c x the budget is what it would have had alone, as long as the
 * rollouts' calls are of similar length. This keeps the group's worst case at what one-at-a-time gives
 * (count x the budget), and it is a plain number in each conversation's stored settings. Counting only the
 * time a rollout's own calls run would be exact, but the engines do not report when a queued call starts.
 */
export function concurrentRolloutConfig(config: AgentConfigInput | undefined, count: number, concurrency: number): AgentConfigInput | undefined {
  const lanes = Math.min(count, concurrency);
  const budget = config?.timeBudgetMs ?? CHAT_DEFAULTS.timeBudgetMs;
  // A bad budget is left for resolveConfig to report as given.
  if (lanes <= 1 || !(budget > 0)) return config;
  return { ...config, timeBudgetMs: budget * lanes };
}
