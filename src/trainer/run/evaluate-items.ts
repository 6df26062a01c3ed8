// Plays evaluation items through the agent loop and scores each run: `cli eval`'s items, and the held-out
// evaluation of a training run on its schedule (run-evaluator.ts) in `cli train --eval-data` and the page.
// Each item runs with a training rollout's settings (rolloutAgentConfig) and is scored by the Experiments
// tab's rule (scoreRunInto), into the item record the tab stores. No Node or DOM APIs: the page uses it too.
import type { BenchmarkItem } from '../../agent/benchmark-import';
import { referenceText, scoreRunInto } from '../../agent/experiment-file';
import { runAgent, type AgentConfigInput, type AgentEngines } from '../../agent/loop';
import { rewardAnswer, type RewardKind } from '../../agent/rewards';
import type { ExperimentItemRecord } from '../../store/records';
import type { Tool } from '../../tools/tool';
import { DEFAULT_AGENT_BUDGET, rolloutAgentConfig } from './agent-budget';

/** Planner seeds are 32-bit. */
const SEEDS = 2 ** 32;

export interface EvalSettings {
  maxTurns: number;
  maxNewTokens: number;
  temperature: number;
  samples: number;
  seed: number;
  /** Decode module replies under their JSON Schemas (AgentConfig.constrainReplies); absent: on. */
  constrainReplies?: boolean;
}

export interface EvaluateOptions extends EvalSettings {
  items: readonly BenchmarkItem[];
  kind: RewardKind;
  /** Ask this engine about rule misses (the `judge` reward). */
  judge?: AgentEngines['shared'];
  engines: AgentEngines;
  tools: Tool[];
  experimentId: string;
  signal?: AbortSignal;
  onItem?: (rec: ExperimentItemRecord, done: number, total: number) => void;
  /** Agent settings laid over the rollout's, key by key (a task's reply limits); leave `generation` out to keep its temperature and seed. */
  agent?: AgentConfigInput;
}

/** Runs every item `samples` times through the agent loop and scores each run; stops early on `signal`. */
export async function evaluateItems(o: EvaluateOptions): Promise<ExperimentItemRecord[]> {
  const out: ExperimentItemRecord[] = [];
  const total = o.items.length * o.samples;
  const budget = { ...DEFAULT_AGENT_BUDGET, maxTurns: o.maxTurns, plannerTokens: o.maxNewTokens, moduleTokens: o.maxNewTokens, ...(o.constrainReplies === false ? { constrainReplies: false } : {}) };
  for (const [i, item] of o.items.entries()) {
    for (let s = 0; s < o.samples; s++) {
      if (o.signal?.aborted) return out;
      const t0 = Date.now();
      const rec: ExperimentItemRecord = { experimentId: o.experimentId, index: out.length, number: i + 1, pid: item.pid, query: item.query, reference: referenceText(item.answer), ...(o.samples > 1 ? { sample: s } : {}) };
      try {
        const run = await runAgent({
          conversationId: `${o.experimentId}-${i + 1}-${s}`,
          query: item.query,
          tools: o.tools,
          engines: o.engines,
          // The settings of a training rollout; the planner samples with this seed (one per sample of the item).
          config: { ...rolloutAgentConfig(budget, o.temperature, (o.seed + i * o.samples + s) % SEEDS), ...o.agent },
          ...(o.signal ? { signal: o.signal } : {}),
        });
        let reward: number | undefined;
        if (o.judge && run.finalAnswer !== null && item.answer !== undefined && item.answer !== null) {
          reward = await rewardAnswer({ kind: o.kind, prediction: run.finalAnswer, reference: item.answer, numbers: item.numbers, options: item.options }, { engine: o.judge, question: item.query, signal: o.signal });
        }
        scoreRunInto(rec, item, o.kind, run, reward);
      } catch (e) {
        rec.errors = [(e as Error)?.message ?? String(e)];
      }
      rec.seconds = (Date.now() - t0) / 1000;
      out.push(rec);
      o.onItem?.(rec, out.length, total);
    }
  }
  return out;
}

