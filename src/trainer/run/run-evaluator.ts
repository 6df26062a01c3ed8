// The held-out evaluation of an agent run (spec.evaluation), on whatever engines the front end has: the page's
// engines, or the CLI's planner serving every module. Each item is played once through the agent loop at
// temperature 0 (the answer the adapter gives, not a lucky sample) with the run's rollout budget and tools,
// and scored by the held-out data's rule (the `judge` reward asks the shared engine about rule misses, as the
// run's rollouts do) — evaluateItems, the same code as `cli eval`.
import type { AgentEngines } from '../../agent/loop';
import type { ExperimentItemRecord } from '../../store/records';
import type { Tool } from '../../tools/tool';
import type { AgentRunData } from './agent-budget';
import { evaluateItems } from './evaluate-items';
import type { RewardKind } from '../../agent/rewards';
import type { TrainingItem } from './agent-collector';
import type { RunEvaluation, RunSpec } from './run-store';
import type { EvalOutcome, RunEvaluator } from './training-run';

export interface AgentEvalEnv {
  engines: AgentEngines;
  tools: Tool[];
  /** Each scored item of an evaluation (the CLI's progress line; a page may list them). */
  onItem?: (step: number, rec: ExperimentItemRecord) => void;
}

/** A held-out schedule for a run's spec: the answered items of `data`, every `every` steps (checked by checkSpec). */
export function heldOutEvaluation(data: { name: string; kind: RewardKind; items: readonly TrainingItem[] }, every: number): RunEvaluation {
  const items = data.items.filter((i) => i.answer !== undefined && i.answer !== null).map((i) => ({ ...i }));
  if (!items.length) throw new Error(`training: the held-out data “${data.name}” has no item with a reference answer to score against`);
  return { every, dataset: data.name, kind: data.kind, items };
}

/** How many items of an evaluation were right, scored, and recorded an error (a reply that did not parse, a throw). */
export function evalOutcome(recs: readonly ExperimentItemRecord[]): EvalOutcome {
  return { correct: recs.filter((r) => r.correct === true).length, total: recs.length, errors: recs.filter((r) => r.errors?.length).length };
}

/** The evaluator of an agent run (`data`: agentRunData(spec)) with a held-out schedule; undefined without one. */
export function agentRunEvaluator(runId: string, spec: RunSpec, data: AgentRunData, env: AgentEvalEnv): RunEvaluator | undefined {
  const e = spec.evaluation;
  if (!e) return undefined;
  const items = e.items.map((it, i) => ({ ...it, pid: (it as { pid?: string }).pid ?? String(i + 1) }));
  return {
    async evaluate({ step, signal, onItem }) {
      const recs = await evaluateItems({
        items,
        kind: e.kind,
        ...(data.judge ? { judge: env.engines.shared } : {}),
        engines: env.engines,
        tools: env.tools,
        experimentId: `${runId}-eval-step-${step}`,
        maxTurns: data.budget.maxTurns,
        maxNewTokens: data.budget.plannerTokens,
        temperature: 0,
        samples: 1,
        seed: spec.grpo.seed ?? 1,
        // Replies decode under their schemas as the run's rollouts do.
        ...(data.budget.constrainReplies === false ? { constrainReplies: false } : {}),
        ...(signal ? { signal } : {}),
        onItem: (rec, done, total) => {
          env.onItem?.(step, rec);
          onItem?.(done, total);
        },
      });
      return evalOutcome(recs);
    },
  };
}
