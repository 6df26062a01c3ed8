// The tool-choice task through the real AgentFlow loop: a planner that chooses the right tools answers every
// held-out question and one that chooses wrong answers none (the reward is the planner's choices alone); the
// random-weight tiny planner's replies under the reply schema are all usable; and a short training run of it
// through the same TrainingRun as any agent run plays, updates the live adapter and evaluates the held-out split.
import { describe, expect, it } from 'vitest';
import { runAgent } from '../agent/loop';
import { scoreAnswer } from '../agent/rewards';
import { ScriptedEngine } from '../agent/scripted-engine';
import { memoryTrainStorage } from '../trainer/checkpoint-memory';
import { CpuPolicyBackend } from '../trainer/cpu-backend';
import { MemoryRunStore } from '../trainer/run/run-store-memory';
import { TrainingRun } from '../trainer/run/training-run';
import { planStep } from '../trainer/run/schedule';
import { adapterTensors } from '../trainer/lora-init';
import type { GrpoConfig } from '../trainer/grpo-config';
import type { ChatMessage, GenerationResult } from '../engine/chat-engine';
import { toolTaskAgentConfig, toolTaskEvalEngines, toolTaskRunSetup, toolTaskRunSpec, TOOL_TASK_BUDGET, type ToolTaskSpecData } from './tool-task-run';
import { toolTask, toolTaskTools } from './tool-task';
import { parseQuestion } from './tool-task-data';

const SMALL = { hiddenSize: 16, intermediateSize: 32 } as const;

/** A planner that names, for the query in its prompt, the tool of the first part no result answers yet. */
function choosing(right: boolean, converter: string) {
  return (messages: ChatMessage[]) => {
    const user = messages.find((m) => m.role === 'user')!.content;
    const query = /^Query: (.*)$/m.exec(user)![1];
    // The full prompt's memory shows "Call: tool …", the brief one "Turn N: tool -> …".
    const used = [...user.matchAll(/(?:\nCall: |\nTurn \d+: )([a-z_]+) /g)].map((m) => m[1]);
    const tools = (parseQuestion(query) ?? []).map((p) => (p.tool === 'python' ? 'calculator' : p.tool === 'convert' ? converter : p.tool));
    const next = tools.find((t) => !used.includes(t)) ?? tools[0];
    const wrong = ['base_generator', converter, 'lookup'].find((t) => !tools.includes(t))!;
    return JSON.stringify({ tool_name: right ? next : wrong, sub_goal: 'x', context: '', justification: '' });
  };
}

describe('tool-choice task', () => {
  it('is answered through the real loop by the right tool choices and by no wrong ones', async () => {
    const task = toolTask({ seed: 1, model: SMALL });
    const tools = toolTaskTools(null, task.shared, task.converterName);
    for (const right of [true, false]) {
      let correct = 0;
      for (const [i, item] of task.splits.heldOut.entries()) {
        const planner = new ScriptedEngine({ planner: [choosing(right, task.converterName)] }, 'planner:scripted');
        const run = await runAgent({ conversationId: `c${i}`, query: item.query, tools, engines: { planner, shared: task.shared }, config: toolTaskAgentConfig(TOOL_TASK_BUDGET, 0, 1, task) });
        correct += run.finalAnswer !== null ? scoreAnswer({ kind: 'exact', prediction: run.finalAnswer, reference: item.answer }) : 0;
      }
      expect(correct).toBe(right ? task.splits.heldOut.length : 0);
    }
  });

  it('gets only usable planner replies from the random-weight planner under the reply schema', async () => {
    const task = toolTask({ seed: 1, model: SMALL });
    const { engines, tools } = toolTaskEvalEngines(task, null, null);
    let replies = 0;
    let right = 0;
    for (const [i, item] of task.splits.heldOut.slice(0, 12).entries()) {
      const run = await runAgent({ conversationId: `u${i}`, query: item.query, tools, engines, config: toolTaskAgentConfig(TOOL_TASK_BUDGET, 1, 100 + i, task) });
      const planned = run.steps.filter((s) => s.kind === 'planner');
      const unusable = run.steps.filter((s) => s.kind === 'error' && s.data.module === 'planner');
      expect(unusable.map((s) => String((s.data as { message?: unknown }).message))).toEqual([]);
      expect(planned.length).toBe(run.turns);
      replies += planned.length;
      right += run.finalAnswer !== null ? scoreAnswer({ kind: 'exact', prediction: run.finalAnswer, reference: item.answer }) : 0;
    }
    expect(replies).toBeGreaterThanOrEqual(12);
    expect(right).toBeLessThan(12);
  });

  it("records each drawn token's choices: the tool name's first token is drawn from groups of tokens, one group a registered tool", async () => {
    const task = toolTask({ seed: 1, model: SMALL });
    const { engines, tools } = toolTaskEvalEngines(task, null, null);
    const results: GenerationResult[] = [];
    for (const [i, item] of task.splits.heldOut.slice(0, 3).entries()) {
      await runAgent({ conversationId: `c${i}`, query: item.query, tools, engines, config: toolTaskAgentConfig(TOOL_TASK_BUDGET, 1, 200 + i, task), onPlannerCall: (call) => void results.push(call.result) });
    }
    expect(results.length).toBeGreaterThanOrEqual(3);
    const names = tools.map((t) => t.card.name).sort();
    for (const r of results) {
      expect(r.choices!.length).toBe(r.tokens.length);
      r.choices!.forEach((groups, k) => {
        if (r.forced![k]) expect(groups, `forced token ${k}`).toBeNull();
        if (groups) expect(groups.flat()).toContain(r.tokens[k]);
      });
      // The first drawn token names the tool: one group a tool, every token of a group beginning that tool's
      // name (base_generator's group holds "b" and "base", two tokens of this tokenizer that spell it).
      const first = r.forced!.indexOf(false);
      const named = r.choices![first]!.map((g) => {
        const tools = [...new Set(g.map((id) => names.filter((n) => n.startsWith(task.tokenizer.decode([id])))).flat())];
        expect(tools, g.map((id) => task.tokenizer.decode([id])).join(' ')).toHaveLength(1);
        return tools[0];
      });
      expect(named.sort()).toEqual(names);
      expect(r.choices![first]!.flat().length).toBeGreaterThan(names.length);
    }
  });

  it('trains the planner through the real loop: steps play, the live adapter is updated, the held-out split is evaluated', async () => {
    const spec = toolTaskRunSpec({ steps: 2, groupSize: 4, queriesPerStep: 2, learningRate: 0.02, evaluateEvery: 2, task: { seed: 1, model: SMALL } });
    const store = new MemoryRunStore();
    const storage = memoryTrainStorage();
    const setup = toolTaskRunSetup({ runId: 'r', spec, store, storage: async () => storage });
    const run = await TrainingRun.start('r', spec, setup.deps);
    // A fresh adapter has B = 0; it moves exactly when some group's rewards differed (a policy gradient).
    const moved: boolean[] = [];
    const summary = await run.run({
      onStep: () => moved.push(adapterTensors((setup.host.current!.backend as CpuPolicyBackend).currentAdapter).some((t) => t.which === 'B' && t.data.some((v) => v !== 0))),
    });
    expect(summary.status).toBe('done');
    const stored = (await store.load('r'))!;
    expect(stored.history).toHaveLength(2);
    for (const m of stored.history) expect(m.samples).toBeGreaterThan(0);
    // Step 0 and the last step are evaluated on the whole held-out split.
    expect(stored.evals?.map((e) => [e.step, e.total])).toEqual([[0, 32], [2, 32]]);
    const learned = stored.history.map((m) => m.noGradientGroups < 2);
    expect(moved).toEqual(learned.map((_, i) => learned.slice(0, i + 1).some(Boolean)));
    setup.destroy();
  });

  it('carries the choices the planner drew from to the update: a run with the entropy bonus over choices steps elsewhere than one without', async () => {
    const adapterAfter = async (grpo: Partial<GrpoConfig>) => {
      const spec = toolTaskRunSpec({ steps: 1, groupSize: 4, queriesPerStep: 2, learningRate: 0.02, evaluateEvery: 0, task: { seed: 1, model: SMALL }, grpo });
      const setup = toolTaskRunSetup({ runId: 'e', spec, store: new MemoryRunStore(), storage: async () => memoryTrainStorage() });
      const run = await TrainingRun.start('e', spec, setup.deps);
      // The session closes with the run: read the adapter's B (0 when fresh; A moves only once B has) after its step.
      let tensors: number[][] = [];
      expect((await run.run({ onStep: () => void (tensors = adapterTensors((setup.host.current!.backend as CpuPolicyBackend).currentAdapter).filter((t) => t.which === 'B').map((t) => Array.from(t.data))) })).status).toBe('done');
      setup.destroy();
      return tensors;
    };
    const plain = await adapterAfter({});
    // The step learned something (B left 0), and the bonus changed what: grpoStep refuses 'choices' when no turn recorded them.
    expect(plain.flat().some((v) => v !== 0)).toBe(true);
    expect(await adapterAfter({ entropyCoef: 0.5, entropyOver: 'choices' })).not.toEqual(plain);
  });

  it('weights the question kinds of a step as the spec says, and refuses a weight of a kind it does not have', () => {
    const spec = toolTaskRunSpec({ task: { seed: 1, kindWeights: { 'two-part': 3 }, model: SMALL }, steps: 2 });
    const setup = toolTaskRunSetup({ runId: 'w', spec, store: new MemoryRunStore(), storage: async () => memoryTrainStorage() });
    // KINDS order: arithmetic, fact, conversion, two-part.
    expect(setup.deps.collector.strataWeights).toEqual([1, 1, 1, 3]);
    const kinds = setup.deps.collector.strata!;
    const step = planStep({ runId: 'w', seed: 1, step: 1, queriesPerStep: 6, groupSize: 1, items: setup.deps.collector.items, strata: kinds, strataWeights: setup.deps.collector.strataWeights! });
    expect(step.map((g) => kinds[g.item]).sort()).toEqual([0, 1, 2, 3, 3, 3]);
    setup.destroy();
    // A new spec weights two-part questions twice (TOOL_TASK_KIND_WEIGHTS); a spec stored before weights draws the kinds equally.
    const fresh = toolTaskRunSpec({ task: { seed: 1, model: SMALL }, steps: 2 });
    const byDefault = toolTaskRunSetup({ runId: 'd', spec: fresh, store: new MemoryRunStore(), storage: async () => memoryTrainStorage() });
    expect(byDefault.deps.collector.strataWeights).toEqual([1, 1, 1, 2]);
    byDefault.destroy();
    const before: ToolTaskSpecData = { ...(fresh.collector as { toolTask: ToolTaskSpecData }).toolTask };
    delete before.kindWeights;
    const plain = toolTaskRunSetup({ runId: 'p', spec: { ...fresh, collector: { ...fresh.collector, toolTask: before } }, store: new MemoryRunStore(), storage: async () => memoryTrainStorage() });
    expect(plain.deps.collector.strataWeights).toBeUndefined();
    plain.destroy();
    expect(() => toolTaskRunSpec({ task: { seed: 1, kindWeights: { 'three-part': 2 } as never, model: SMALL } })).toThrow("kindWeights names 'three-part', not a question kind (arithmetic, fact, conversion, two-part)");
    expect(() => toolTaskRunSpec({ task: { seed: 1, kindWeights: { fact: 0.5 }, model: SMALL } })).toThrow('kindWeights.fact must be an integer from 1 to 16, got 0.5');
  });
});
