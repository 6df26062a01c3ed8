// <agentflow-chat>'s training API in Chromium with real IndexedDB: train() runs the library's TrainingRun on
// the element's engines and tools (the planner's optimizer stood in for by one that records each batch),
// fires a step event per step and a done event, stores the run where resumeTraining() continues it after a
// pause, and refuses engines that cannot be trained. A run is one of the element's engineUse() uses, and it
// pauses (as pauseTraining() does) when the page replaces the engines under it.
import { describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import type { ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { ScriptedEngine } from '../agent/scripted-engine';
import { resolveGrpoConfig } from '../trainer/grpo-config';
import type { StepStats } from '../trainer/grpo-step';
import type { TurnSample } from '../model/samples';
import type { PolicyTrainer } from '../trainer/training-host';
import { IdbRunStore } from '../trainer/run/run-store-idb';
import './agentflow-chat';
import type { RunSummary } from '../trainer/run/training-run';
import { WorkerGoneError } from '../util/worker-watch';
import type { AgentFlowChat, AgentflowTrainDoneDetail, AgentflowTrainStepDetail, AgentflowTrainStoppedDetail } from './agentflow-chat';

// Odd planner seeds reverse the right text, even ones another: a group's rewards follow its seeds.
const plan = (seed: number) => JSON.stringify({ justification: 'j', context: '', sub_goal: `Reverse ${seed % 2 ? 'ba' : 'xy'}`, tool_name: 'reverse' });
const byCall: ProbeReplyFn = (module, messages, options) => {
  const user = messages[messages.length - 1].content;
  if (module === 'planner') return plan(options.seed ?? 0);
  if (module === 'executor') return `{"text": "${/Sub-goal: Reverse (\w+)/.exec(user)?.[1] ?? ''}"}`;
  if (module === 'verifier') return '{"verdict": "STOP"}';
  if (module === 'generator') return `<answer>${/Result: (\w+)/.exec(user)?.[1] ?? 'none'}</answer>`;
  return 'Reverse it.';
};

/** A planner whose "worker" the page can dispose: later calls, and those waiting, fail as a dead worker's do. */
class DisposableProbe extends ProbeEngine {
  private killed: WorkerGoneError | null = null;
  private waiting: Array<(e: Error) => void> = [];
  protected override async answer(messages: ChatMessage[], options: GenerateOptions): Promise<GenerationResult> {
    if (this.killed) throw this.killed;
    return Promise.race([super.answer(messages, options), new Promise<never>((_, reject) => this.waiting.push(reject))]);
  }
  dispose(): void {
    this.killed = new WorkerGoneError('planner', 'terminated');
    for (const w of this.waiting.splice(0)) w(this.killed);
  }
}

function steppingTrainer(): PolicyTrainer & { batches: TurnSample[][] } {
  const batches: TurnSample[][] = [];
  return {
    batches,
    async trainStart(o) {
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: o.resume ? batches.length : 0, optimizerSteps: batches.length, resumed: !!o.resume, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    async trainStep(samples) {
      batches.push(samples);
      const mean = samples.reduce((a, s) => a + s.reward, 0) / samples.length;
      return { step: batches.length, optimizerSteps: batches.length, rewardMean: mean, loss: 0.1, kl: 0, clipFraction: 0, ratioMean: 1, gradNorm: 1, samples: samples.length, responseTokens: 5, tokens: 50, groups: 1, noGradientGroups: 0, groupStats: [], tokensPerSecond: 1, ms: { oldLogprobs: 0, refLogprobs: 0, update: 0, total: 0 } } satisfies StepStats;
    },
    async trainCheckpoint() {
      return { step: batches.length, adapterId: `ckpt-${batches.length}` };
    },
    trainStop: () => undefined,
  };
}

async function mount(engines: { planner: import('../engine/chat-engine').ChatEngine; shared: import('../engine/chat-engine').ChatEngine }, trainer?: PolicyTrainer): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat') as AgentFlowChat;
  el.dbName = `element-train-${Math.random()}`;
  el.engines = engines;
  el.trainer = trainer;
  el.extraTools = [
    {
      card: { name: 'reverse', description: 'Reverses text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'reversed', limitations: [], examples: [], usesNetwork: false },
      async run(args) {
        return { ok: true, output: [...String(args.text)].reverse().join('') };
      },
    },
  ];
  el.tools = 'reverse';
  document.body.append(el);
  await el.updateComplete;
  await expect.poll(() => el.toolRegistry.list().some((t) => t.name === 'reverse' && t.enabled)).toBe(true);
  return el;
}

describe('<agentflow-chat> train()', () => {
  it('trains through the library run, firing a step event per step, and resumes a paused run', async () => {
    const trainer = steppingTrainer();
    const el = await mount({ planner: new ProbeEngine(byCall, 'planner:probe'), shared: new ProbeEngine(byCall, 'shared') }, trainer);
    const steps: AgentflowTrainStepDetail[] = [];
    const done: AgentflowTrainDoneDetail[] = [];
    el.addEventListener('agentflow-train-step', (e) => {
      steps.push((e as CustomEvent<AgentflowTrainStepDetail>).detail);
      if (steps.length === 1) el.pauseTraining();
    });
    el.addEventListener('agentflow-train-done', (e) => done.push((e as CustomEvent<AgentflowTrainDoneDetail>).detail));
    const items = [{ question: 'Reverse ba', answer: 'ab' }];
    const first = await el.train({ items, name: 'rev', steps: 2, groupSize: 4, budget: { maxTurns: 1 } });
    expect(first).toMatchObject({ status: 'paused', steps: 1 });
    expect(trainer.batches[0].map((s) => s.rolloutId.split(':').pop())).toEqual(['r0', 'r1', 'r2', 'r3']);
    // The step's reward is its rollouts' mean, as scored against 'ab'.
    const rewards = trainer.batches[0].map((s) => s.reward);
    expect(steps.map((s) => [s.metrics.step, s.metrics.reward])).toEqual([[1, rewards.reduce((a, b) => a + b, 0) / 4]]);
    const stored = await new IdbRunStore(el.dbName).load(first.runId);
    expect(stored).toMatchObject({ status: 'paused', spec: { dataset: 'rev', steps: 2 } });

    const second = await el.resumeTraining(first.runId);
    expect(second).toMatchObject({ runId: first.runId, status: 'done', steps: 2 });
    expect(steps.map((s) => s.metrics.step)).toEqual([1, 2]);
    expect(done.map((d) => d.summary.status)).toEqual(['paused', 'done']);
    el.remove();
  });

  it('is among the uses engineUse() reports for the page to stop, and stops the way pauseTraining() does', async () => {
    const trainer = steppingTrainer();
    const el = await mount({ planner: new ProbeEngine(byCall, 'planner:probe'), shared: new ProbeEngine(byCall, 'shared') }, trainer);
    expect(el.engineUse()).toBeNull();
    const uses: Array<{ what: string; kept: string }> = [];
    el.addEventListener('agentflow-train-step', () => {
      const use = el.engineUse();
      if (!use || uses.length) return;
      uses.push({ what: use.what, kept: use.kept });
      void use.stop();
    });
    const summary = await el.train({ items: [{ question: 'Reverse ba', answer: 'ab' }], steps: 3, groupSize: 4, budget: { maxTurns: 1 } });
    expect(uses).toEqual([{ what: expect.stringMatching(/^a training run \(embed-.*\) started through the chat element$/), kept: 'it is paused with its checkpoints kept; resumeTraining() or the Training tab continues it' }]);
    expect(summary).toMatchObject({ status: 'paused', steps: 1 });
    expect(await new IdbRunStore(el.dbName).load(summary.runId)).toMatchObject({ status: 'paused' });
    expect(el.engineUse()).toBeNull();
    el.remove();
  });

  it('pauses when the page replaces its engines mid-step, before they are disposed, and says so', async () => {
    const trainer = steppingTrainer();
    const planner = new DisposableProbe(byCall, 'planner:old');
    const el = await mount({ planner, shared: new ProbeEngine(byCall, 'shared') }, trainer);
    const fresh = new ProbeEngine(byCall, 'planner:new');
    const stopped: AgentflowTrainStoppedDetail[] = [];
    el.addEventListener('agentflow-train-stopped', (e) => stopped.push((e as CustomEvent<AgentflowTrainStoppedDetail>).detail));
    // Step 2's planner calls wait, so the swap lands while its rollouts are in flight.
    el.addEventListener('agentflow-train-step', () => planner.hold());
    let ended: unknown = null;
    const training = el.train({ items: [{ question: 'Reverse ba', answer: 'ab' }], steps: 3, groupSize: 4, budget: { maxTurns: 1 } }).then(
      (s) => (ended = s),
      (e: unknown) => (ended = e),
    );
    await expect.poll(() => trainer.batches.length === 1 && planner.inFlight > 0).toBe(true);
    // What an embedding page does: new engines in, old ones disposed at once.
    el.engines = { planner: fresh, shared: new ProbeEngine(byCall, 'shared') };
    planner.dispose();
    await training;
    expect(ended).toMatchObject({ status: 'paused', steps: 1 });
    expect(trainer.batches).toHaveLength(1);
    expect(fresh.calls).toHaveLength(0);
    const runId = (ended as RunSummary).runId;
    expect(stopped).toEqual([{ runId, reason: 'engines-replaced', message: expect.stringContaining(`Training run '${runId}' was paused after 1 step`) }]);
    await expect.poll(() => el.renderRoot.querySelector('[data-testid="training-notice"]')?.textContent ?? '').toBe(stopped[0].message);
    el.remove();
  });

  it('sets a run up on the engines and trainer it was called with when the page swaps both right after, then pauses it', async () => {
    const trainer = steppingTrainer();
    const el = await mount({ planner: new ProbeEngine(byCall, 'planner:old'), shared: new ProbeEngine(byCall, 'shared') }, trainer);
    const started: string[] = [];
    const note = (who: string, t: PolicyTrainer): PolicyTrainer => ({ ...t, trainStart: (o) => (started.push(who), t.trainStart(o)) });
    el.trainer = note('old', trainer);
    const fresh = new ProbeEngine(byCall, 'planner:new');
    const training = el.train({ items: [{ question: 'Reverse ba', answer: 'ab' }], steps: 2, groupSize: 4, budget: { maxTurns: 1 } });
    // What an embedding page does: new engines and their optimizer in, in the same task as the call.
    el.engines = { planner: fresh, shared: new ProbeEngine(byCall, 'shared') };
    el.trainer = note('new', steppingTrainer());
    expect(await training).toMatchObject({ status: 'paused', steps: 0 });
    expect(started).toEqual(['old']);
    expect(fresh.calls).toHaveLength(0);
    el.remove();
  });

  it('refuses engines whose planner cannot be trained, before storing anything', async () => {
    const el = await mount({ planner: new ScriptedEngine({}, 'planner:scripted'), shared: new ScriptedEngine({}, 'shared') });
    await expect(el.train({ items: [{ query: 'q', answer: 'a' }], steps: 1 })).rejects.toThrow(/training needs the planner on this page’s WebGPU runtime/);
    el.remove();
  });
});
