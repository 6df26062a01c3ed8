// Flow-GRPO's rollouts on the real agent: each group runs the AgentFlow loop G times on one query (the
// planner sampling with the adapter being trained at the run's temperature, one seed per rollout), a few at a
// time so their planner calls meet in the planner's batcher and decode together, and scores each final
// answer with a verifiable 0/1 reward. A run that ends without an answer counts as wrong (0).
import { runAgent, type AgentConfigInput, type AgentEngines, type AgentRunResult, type PlannerCall, type StepSink } from '../../agent/loop';
import { rewardAnswer, type RewardKind } from '../../agent/rewards';
import { plannerTurn } from '../../agent/rollouts';
import { checkConcurrency, concurrentRolloutConfig, runPlannerRollouts, type PlannerPresence } from '../../agent/rollout-pool';
import type { ChatEngine, GenerationResult } from '../../engine/chat-engine';
import type { Tool } from '../../tools/tool';
import type { CollectContext, RolloutCollector } from './collector';
import type { GroupPlan } from './schedule';
import type { CollectedGroup, Trajectory } from './rollout-samples';

/** A query with a verifiable answer (benchmark-import's BenchmarkItem has this shape). */
export interface TrainingItem {
  query: string;
  answer: unknown;
  /** Game of 24: the puzzle's numbers. Multiple choice: the options in letter order. */
  numbers?: number[];
  options?: string[];
}

/** How a finished run is scored. */
export interface RewardOptions {
  kind: RewardKind;
  /**
   * Also ask this engine when the rule says wrong (exact-match answers phrased differently): the
   * `judge` reward. Its verdict is the reward's last word.
   */
  judge?: ChatEngine;
  /** A reward of your own for a finished run (library users); replaces the rule above. */
  custom?: (item: TrainingItem, run: AgentRunResult) => number | Promise<number>;
}

/** Where a rollout's steps are kept while it runs (the page: a conversation shown in Chat). */
export interface RolloutStorage {
  begin(o: { id: string; title: string; query: string; runId: string; groupId: string; reference: unknown; config: AgentConfigInput }): Promise<StepSink>;
  end(id: string, o: { status: AgentRunResult['status']; answer: string | null; reward: number }): Promise<void>;
}

export interface AgentCollectorOptions {
  runId: string;
  items: readonly TrainingItem[];
  engines: AgentEngines;
  tools: Tool[];
  /** The agent settings of the rollout with this planner seed (temperature, budgets). */
  agent: (seed: number) => AgentConfigInput;
  reward: RewardOptions;
  /** Rollouts of a group that run at once (1 .. G). */
  concurrency: number;
  storage?: RolloutStorage;
  /** Each item's stratum, when a step draws across strata in turn (RolloutCollector.strata). */
  strata?: readonly number[];
  /** How often each stratum comes up (RolloutCollector.strataWeights). */
  strataWeights?: readonly number[];
}

export class AgentCollector implements RolloutCollector {
  constructor(readonly o: AgentCollectorOptions) {
    if (!o.items.length) throw new Error('agent rollouts: the training set has no items');
    checkConcurrency(o.concurrency, 'training: rollouts at once');
  }

  get items(): number {
    return this.o.items.length;
  }

  get strata(): readonly number[] | undefined {
    return this.o.strata;
  }

  get strataWeights(): readonly number[] | undefined {
    return this.o.strataWeights;
  }

  async collect(plans: readonly GroupPlan[], ctx: CollectContext): Promise<CollectedGroup[]> {
    const out: CollectedGroup[] = [];
    for (const [i, plan] of plans.entries()) {
      if (ctx.signal?.aborted) break;
      out.push(await this.group(plan, ctx, i, plans.length));
    }
    return out;
  }

  private async group(plan: GroupPlan, ctx: CollectContext, index: number, groups: number): Promise<CollectedGroup> {
    const item = this.o.items[plan.item];
    if (!item) throw new Error(`agent rollouts: the plan names item ${plan.item}, but the training set has ${this.o.items.length}`);
    const size = plan.rollouts.length;
    // Every rollout analyses the same query greedily: one engine call serves the whole group.
    const sharedAnalysis = new Map<string, Promise<GenerationResult>>();
    let done = 0;
    const report = () => ctx.onProgress?.({ step: plan.step, groupsDone: index, groups, rolloutsDone: done, groupSize: size });
    report();
    const outcomes = await runPlannerRollouts(
      size,
      this.o.concurrency,
      this.o.engines.planner,
      async (g, presence) => {
        const t = await this.rollout(plan, g, item, { sharedAnalysis, presence, signal: ctx.signal });
        done++;
        report();
        return t;
      },
      ctx.signal,
    );
    const trajectories: Trajectory[] = [];
    for (const o of outcomes) {
      if (!o.ok) throw o.error;
      trajectories.push(o.value);
    }
    return { groupId: plan.groupId, item: plan.item, trajectories };
  }

  private async rollout(
    plan: GroupPlan,
    g: number,
    item: TrainingItem,
    o: { sharedAnalysis: Map<string, Promise<GenerationResult>>; presence: PlannerPresence; signal?: AbortSignal },
  ): Promise<Trajectory> {
    const { id, seed } = plan.rollouts[g];
    const config = concurrentRolloutConfig(this.o.agent(seed), plan.rollouts.length, this.o.concurrency) ?? {};
    const sink = await this.o.storage?.begin({ id, title: `${plan.groupId} #${g + 1}`, query: item.query, runId: this.o.runId, groupId: plan.groupId, reference: item.answer, config });
    const calls: PlannerCall[] = [];
    let run: AgentRunResult;
    try {
      run = await runAgent({
        conversationId: id,
        query: item.query,
        tools: this.o.tools,
        engines: this.o.engines,
        config,
        signal: o.signal,
        ...(sink ? { sink } : {}),
        onPlannerCall: (c) => void calls.push(c),
        sharedAnalysis: o.sharedAnalysis,
        onPlannerDone: o.presence.done,
        onPlannerWait: o.presence.waiting,
      });
    } catch (e) {
      // The stored conversation says it failed rather than staying 'running'.
      await this.o.storage?.end(id, { status: 'error', answer: null, reward: 0 }).catch(() => undefined);
      throw e;
    }
    const reward = await this.score(item, run, o.signal);
    await this.o.storage?.end(id, { status: run.status, answer: run.answer, reward });
    return {
      rolloutId: id,
      rollout: g,
      reward,
      turns: calls.map(plannerTurn),
      status: run.status,
      answer: run.finalAnswer,
      skipped: [],
    };
  }

  private async score(item: TrainingItem, run: AgentRunResult, signal?: AbortSignal): Promise<number> {
    if (run.status !== 'done' || run.finalAnswer === null) return 0;
    const r = this.o.reward;
    if (r.custom) return r.custom(item, run);
    return rewardAnswer({ kind: r.kind, prediction: run.finalAnswer, reference: item.answer, numbers: item.numbers, options: item.options }, r.judge ? { engine: r.judge, question: item.query, signal } : undefined);
  }
}
