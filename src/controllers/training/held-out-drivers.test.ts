// The page's two agent-run front ends with a held-out evaluation: the Training tab's driver (heldOut) and
// <agentflow-chat>'s train() (evalItems/evalEvery), on scripted engines and an optimizer without a model, with
// the run in (fake) IndexedDB: the evaluations are stored with the run and reported as they happen.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { multiplyTool } from '../../../tests/support/test-tools';
import { ProbeEngine, type ProbeReplyFn } from '../../agent/probe-engine';
import { resolveGrpoConfig } from '../../trainer/grpo-config';
import type { StepStats } from '../../trainer/grpo-step';
import type { EvalPoint } from '../../trainer/run/metrics';
import { IdbRunStore } from '../../trainer/run/run-store-idb';
import type { PolicyTrainer } from '../../trainer/training-host';
import { createAgentDriver } from './agent-training-driver';
import { driveTraining, startElementTraining } from './element-training';

// The planner multiplies 7 by its seed; the generator answers with the first result. At temperature 0 with
// seed 1, held-out item i is planned with seed 1 + i: 7 for the first, 14 for the second.
const replies: ProbeReplyFn = (module, messages, options) => {
  const user = messages[messages.length - 1].content;
  switch (module) {
    case 'planner':
      return JSON.stringify({ justification: 'x', context: '', sub_goal: `Multiply 7 by ${options.seed!}`, tool_name: 'Multiply_Tool' });
    case 'executor': {
      const [, a, b] = /Sub-goal: Multiply (\d+) by (\d+)/.exec(user) ?? [];
      return `{"a": ${a}, "b": ${b}}`;
    }
    case 'verifier':
      return '{"verdict": "STOP"}';
    case 'generator':
      return `<answer>${/Result: (\d+)/.exec(user)?.[1] ?? 'none'}</answer>`;
    default:
      return 'Multiply.';
  }
};

function trainer(): PolicyTrainer {
  let step = 0;
  return {
    async trainStart(o) {
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    async trainStep(samples) {
      step++;
      const stats: StepStats = { step, optimizerSteps: step, rewardMean: 0, loss: 0, kl: 0, clipFraction: 0, ratioMean: 1, gradNorm: 0, samples: samples.length, responseTokens: 0, tokens: 0, groups: 1, noGradientGroups: 0, groupStats: [], tokensPerSecond: 0, ms: { oldLogprobs: 0, refLogprobs: 0, update: 0, total: 0 } };
      return stats;
    },
    async trainCheckpoint() {
      return { step, adapterId: `ckpt-${step}` };
    },
    trainStop: () => undefined,
  };
}

const train = [{ query: 'What is 7 times 6?', answer: '42' }];
const heldOut = [{ query: 'What is 7 times 1?', answer: '7' }, { query: 'What is 7 times 3?', answer: '21' }];
const budget = { maxTurns: 1, plannerTokens: 64, moduleTokens: 64, queriesPerStep: 1, microBatchTokens: 1024 };

describe('held-out evaluation in the page', () => {
  it('the Training tab driver: a run with heldOut evaluates at step 0, every K-th and the last step, stored with the run', async () => {
    const dbName = `held-out-tab-${Math.random()}`;
    const engine = new ProbeEngine(replies, 'probe');
    const d = await createAgentDriver(
      { dataset: 'mult', reward: 'numeric', groupSize: 2, steps: 3, learningRate: 1e-5, rank: 2, targets: ['q'] },
      { name: 'mult', kind: 'numeric', items: train },
      { trainer: trainer(), engines: { planner: engine, shared: engine }, tools: [multiplyTool], dbName },
      budget,
      { extraRollouts: 0 },
      { benchmark: { name: 'held', kind: 'numeric', items: heldOut }, every: 2 },
    );
    const seen: EvalPoint[] = [];
    await d.run(() => undefined, { onEval: (p) => seen.push(p) });
    expect(seen.map((p) => [p.step, p.correct, p.total])).toEqual([
      [0, 1, 2],
      [2, 1, 2],
      [3, 1, 2],
    ]);
    expect((await new IdbRunStore(dbName).load(d.runId))!.evals).toEqual(seen);
  });

  it('<agentflow-chat> train(): evalItems and evalEvery make the schedule, onEval reports each; evalEvery alone is refused', async () => {
    const dbName = `held-out-element-${Math.random()}`;
    const engine = new ProbeEngine(replies, 'probe');
    const on = { engines: { planner: engine, shared: engine }, trainer: trainer() };
    const run = await startElementTraining({ items: train, reward: 'numeric', steps: 2, groupSize: 2, rank: 2, budget, extraRollouts: 0, maxUpdateKl: 0.05, evalItems: heldOut.map((h) => ({ question: h.query, answer: h.answer })), evalEvery: 1 }, on, [multiplyTool], dbName);
    expect(run.spec.evaluation).toMatchObject({ every: 1, dataset: 'embedded (held out)', kind: 'numeric' });
    expect(run.spec.grpo).toMatchObject({ extraRollouts: 0, maxUpdateKl: 0.05 });
    const seen: Array<[string, number, number]> = [];
    await driveTraining(run, { onStep: () => undefined, onProgress: () => undefined, onEval: (id, p) => seen.push([id, p.step, p.accuracy]) });
    expect(seen).toEqual([
      [run.id, 0, 0.5],
      [run.id, 1, 0.5],
      [run.id, 2, 0.5],
    ]);
    await expect(startElementTraining({ items: train, steps: 1, evalEvery: 2 }, on, [multiplyTool], dbName)).rejects.toThrow('train(): evalEvery needs evalItems');
    await expect(startElementTraining({ items: train, steps: 1, maxUpdateKl: -1 }, on, [multiplyTool], dbName)).rejects.toThrow(/'maxUpdateKl' must be a finite number >= 0/);
    await expect(startElementTraining({ items: train, steps: 1, evalItems: [{ question: ' ', answer: '1' }] }, on, [multiplyTool], dbName)).rejects.toThrow("train(): evalItems[0] has no 'query' (or 'question') text");
  });
});
