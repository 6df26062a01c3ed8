// Rollouts of the real agent for Flow-GRPO: each step runs the AgentFlow loop G times for each of a few
// training queries (planner on our runtime with the trained adapter, sampling at the config's
// temperature, a fresh seed per rollout), scores each final answer, and turns every planner call into a
// turn sample carrying the rollout's reward and the sampling logprobs the engine reported. A group's rollouts
// can run a few at a time (`concurrency`), so their planner calls are decoded together.
import { runAgent, type AgentConfigInput, type AgentEngines, type AgentRunResult, type PlannerCall } from '../agent/loop';
import { scoreAnswer, type RewardKind } from '../agent/rewards';
import { checkConcurrency, concurrentRolloutConfig, runPlannerRollouts } from '../agent/rollout-pool';
import type { Tool } from '../tools/types';
import type { Rng } from '../util/rng';
import type { TurnSample } from './samples';
import type { RolloutSource } from './trainer';

export interface TrainingItem {
  query: string;
  reference: unknown;
  kind?: RewardKind;
  /** Game of 24 numbers / multiple-choice options (see scoreAnswer). */
  numbers?: number[];
  options?: string[];
}

export interface AgentRolloutSourceOptions {
  runId: string;
  items: TrainingItem[];
  tools: Tool[];
  engines: AgentEngines;
  agent?: AgentConfigInput;
  queriesPerStep: number;
  groupSize: number;
  temperature: number;
  /** 1 or 0 for a finished run; default: scoreAnswer with the item's kind (exact match when absent). */
  reward?: (item: TrainingItem, run: AgentRunResult) => number;
  /** Sees every planner call (e.g. src/agent/rollouts.ts rolloutRecorder, to store them for export). */
  onPlannerCall?: (call: PlannerCall, ids: { runId: string; groupId: string }) => Promise<void> | void;
  /**
   * How many rollouts of a group run at once (default 1). The planner is told how many are running, and each
   * rollout's time budget is multiplied by the number at once (concurrentRolloutConfig). Seeds, samples and
   * the report do not depend on it.
   */
  concurrency?: number;
  /** Once aborted, no further rollout starts; running ones end 'interrupted'. */
  signal?: AbortSignal;
}

export interface AgentStepReport {
  rollouts: number;
  plannerCalls: number;
  /** Planner calls that could not be trained on (no token ids: the planner ran on web-llm). */
  skippedCalls: number;
  errors: number;
}

export class AgentRolloutSource implements RolloutSource {
  lastReport: AgentStepReport = { rollouts: 0, plannerCalls: 0, skippedCalls: 0, errors: 0 };

  constructor(readonly o: AgentRolloutSourceOptions) {
    if (!o.items.length) throw new Error('agent rollouts: the training set has no items');
    if (o.queriesPerStep > o.items.length) throw new Error(`agent rollouts: queriesPerStep (${o.queriesPerStep}) exceeds the ${o.items.length} training items`);
    checkConcurrency(o.concurrency ?? 1, 'agent rollouts: concurrency');
  }

  async collect(step: number, rng: Rng): Promise<{ samples: TurnSample[]; rolloutMs: number }> {
    const t0 = Date.now();
    const order = this.o.items.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const samples: TurnSample[] = [];
    const report: AgentStepReport = { rollouts: 0, plannerCalls: 0, skippedCalls: 0, errors: 0 };
    const agent = this.o.agent ?? {};
    for (const itemIndex of order.slice(0, this.o.queriesPerStep)) {
      if (this.o.signal?.aborted) break;
      const item = this.o.items[itemIndex];
      const groupId = `${this.o.runId}:step${step}:item${itemIndex}`;
      // Drawn before any rollout runs, in rollout order: rollout g gets the seed it would get run alone.
      const seeds = Array.from({ length: this.o.groupSize }, () => rng.int(2 ** 31));
      const calls: PlannerCall[][] = seeds.map(() => []);
      const concurrency = this.o.concurrency ?? 1;
      const outcomes = await runPlannerRollouts(
        this.o.groupSize,
        concurrency,
        this.o.engines.planner,
        (g, plannerDone) =>
          runAgent({
            conversationId: `${groupId}:r${g}`,
            query: item.query,
            tools: this.o.tools,
            engines: this.o.engines,
            signal: this.o.signal,
            config: concurrentRolloutConfig(
              { ...agent, generation: { ...agent.generation, planner: { ...agent.generation?.planner, temperature: this.o.temperature, seed: seeds[g] } } },
              this.o.groupSize,
              concurrency,
            ),
            onPlannerCall: async (c) => {
              calls[g].push(c);
              await this.o.onPlannerCall?.(c, { runId: this.o.runId, groupId });
            },
            onPlannerDone: plannerDone,
          }),
        this.o.signal,
      );
      for (const [g, outcome] of outcomes.entries()) {
        if (!outcome.ok) throw outcome.error;
        const run = outcome.value;
        report.rollouts++;
        if (run.status === 'error') report.errors++;
        const reward = this.o.reward
          ? this.o.reward(item, run)
          : scoreAnswer({ kind: item.kind ?? 'exact', prediction: run.finalAnswer ?? run.answer ?? '', reference: item.reference, numbers: item.numbers, options: item.options });
        for (const c of calls[g]) {
          report.plannerCalls++;
          const r = c.result;
          if (!r.promptTokens.length || !r.tokens.length || r.logprobs.length !== r.tokens.length) {
            report.skippedCalls++;
            continue;
          }
          samples.push({ groupId, rolloutId: run.conversationId, turn: c.turn, promptTokens: [...r.promptTokens], responseTokens: [...r.tokens], reward, oldLogprobs: [...r.logprobs] });
        }
      }
    }
    this.lastReport = report;
    return { samples, rolloutMs: Date.now() - t0 };
  }
}
