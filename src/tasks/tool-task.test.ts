// The task's identity: an adapter's base model names every setting the planner is built from, and reads back to
// them; a run stored before specs recorded the shape is rebuilt on the first shape it was made on.
import { describe, expect, it } from 'vitest';
import { isToolTaskBaseModel, toolTask, toolTaskBaseModel, toolTaskOfBaseModel, toolTaskSettings, TOOL_TASK_BASE_MODEL, TOOL_TASK_CONVERTER, TOOL_TASK_MODEL, TOOL_TASK_PLANNER_PROMPT, TOOL_TASK_MODEL_V1, TOOL_TASK_TRAIN_PER_KIND } from './tool-task';
import { toolTaskOf, toolTaskRunSpec } from './tool-task-run';

describe('tool task identity', () => {
  it('names every setting in the base model and reads them back', () => {
    const o = { seed: 7, arithmetic: 'python' as const, trainPerKind: 5, heldOutPerKind: 3, model: { hiddenSize: 16, embedScale: 0.5 } };
    const name = toolTaskBaseModel(o);
    expect(name.startsWith(`${TOOL_TASK_BASE_MODEL}?`)).toBe(true);
    expect(isToolTaskBaseModel(name)).toBe(true);
    expect(toolTaskOfBaseModel(name)).toEqual(toolTaskSettings(o));
    expect(toolTaskBaseModel({})).not.toBe(toolTaskBaseModel({ seed: 2 }));
    expect(toolTaskBaseModel({})).not.toBe(toolTaskBaseModel({ model: { attentionScale: 3 } }));
    expect(toolTaskBaseModel({})).not.toBe(toolTaskBaseModel({ plannerPrompt: 'full' }));
    expect(toolTaskBaseModel({})).not.toBe(toolTaskBaseModel({ subGoalChars: 3 }));
    expect(toolTaskBaseModel({})).not.toBe(toolTaskBaseModel({ entityWords: false }));
    // A name written before the sub-goal's length was recorded was made with the first shape's 8 characters.
    expect(toolTaskOfBaseModel(name.replace(/&subGoalChars=\d+/, ''))).toEqual({ ...toolTaskSettings(o), subGoalChars: 8 });
    expect(() => toolTaskOfBaseModel(name.replace(/subGoalChars=\d+/, 'subGoalChars=x'))).toThrow(/has no number for 'subGoalChars'/);
    // Likewise the entity words: absent, false (the tokenizer learned from the training prompts alone).
    expect(name).toContain('&entityWords=true&');
    const off = toolTaskBaseModel({ ...o, entityWords: false });
    expect(off).not.toBe(name);
    expect(toolTaskOfBaseModel(off)).toEqual(toolTaskSettings({ ...o, entityWords: false }));
    expect(toolTaskOfBaseModel(name.replace(/&entityWords=true/, ''))).toEqual({ ...toolTaskSettings(o), entityWords: false });
    expect(() => toolTaskOfBaseModel(name.replace('entityWords=true', 'entityWords=yes'))).toThrow(/names entityWords 'yes' \(true or false\)/);
    // The first shape's bare name records no settings; other models' adapters are not the task's.
    expect(toolTaskOfBaseModel(TOOL_TASK_BASE_MODEL)).toBe('v1');
    expect(toolTaskOfBaseModel('Qwen/Qwen2.5-0.5B-Instruct')).toBeNull();
    expect(isToolTaskBaseModel('agentflow-tool-taskx')).toBe(false);
    expect(() => toolTaskOfBaseModel(name.replace(/hiddenSize=16/, 'hiddenSize=abc'))).toThrow(/has no number for 'hiddenSize'/);
    expect(() => toolTaskOfBaseModel(name.replace('arithmetic=python', 'arithmetic=abacus'))).toThrow(/names arithmetic 'abacus'/);
    // Per-kind training counts are named only when set (adapters made without them keep their names), and read back.
    expect(name).not.toContain('trainCounts');
    const counted = toolTaskBaseModel({ ...o, trainCounts: { 'two-part': 9, fact: 4 } });
    expect(counted).toContain(`&trainCounts=${encodeURIComponent('fact:4,two-part:9')}`);
    expect(toolTaskOfBaseModel(counted)).toEqual(toolTaskSettings({ ...o, trainCounts: { fact: 4, 'two-part': 9 } }));
    expect(() => toolTaskOfBaseModel(counted.replace('two-part%3A9', 'three-part%3A9'))).toThrow(/trainCounts entry 'three-part:9' that is not kind:count/);
  });

  it('records every setting in a new spec, and rebuilds a spec stored without them as it was made', () => {
    const spec = toolTaskRunSpec({ steps: 1, evaluateEvery: 0, task: { seed: 3 } });
    expect(toolTaskOf(spec)).toMatchObject({ seed: 3, converterName: TOOL_TASK_CONVERTER, plannerPrompt: TOOL_TASK_PLANNER_PROMPT, trainPerKind: TOOL_TASK_TRAIN_PER_KIND, model: TOOL_TASK_MODEL });
    const stored = (spec.collector as { toolTask: Record<string, unknown> }).toolTask;
    expect(Object.keys(stored).sort()).toEqual(['converterName', 'drawByKind', 'entityWords', 'kindWeights', 'model', 'plannerPrompt', 'seed', 'subGoalChars', 'trainPerKind']);
    const other = toolTaskRunSpec({ steps: 1, evaluateEvery: 0, task: { seed: 3, plannerPrompt: 'brief', converterName: 'unit_convert', trainPerKind: 20, model: { attentionScale: 1 } } });
    expect(toolTaskOf(other)).toMatchObject({ plannerPrompt: 'brief', converterName: 'unit_convert', trainPerKind: 20, model: { ...TOOL_TASK_MODEL, attentionScale: 1 } });
    const old = { ...spec, collector: { ...spec.collector, toolTask: { seed: 3, drawByKind: true } } };
    expect(toolTaskOf(old)).toMatchObject({ seed: 3, converterName: 'convert', plannerPrompt: 'full', subGoalChars: 8, entityWords: false, trainPerKind: 12, model: TOOL_TASK_MODEL_V1 });
    expect(toolTask({ ...toolTaskOf(old)!, trainPerKind: 2, heldOutPerKind: 1 }).replyLimits).toEqual({ subGoal: 8, context: 1, justification: 1 });
    expect(() => toolTask({ seed: 3, subGoalChars: 0, trainPerKind: 2, heldOutPerKind: 1 })).toThrow(/replyLimits\.subGoal must be an integer from 1 to \d+ \(characters\), got 0/);
  });

  it("with entityWords, a held-out fact's country or element is one token, as a training fact's is; without, it falls apart", () => {
    const entity = (q: string) => /(?:capital|chemical symbol) of ([A-Za-z]+)\?$/.exec(q)![1];
    const tokens = (entityWords: boolean) => {
      // The brief prompt leaves the merges room for every entity (the full prompt's text takes most of the 480).
      const task = toolTask({ seed: 2, trainPerKind: 12, heldOutPerKind: 8, plannerPrompt: 'brief', entityWords });
      const count = (split: 'train' | 'heldOut') => task.splits[split].filter((i) => i.kind === 'fact').map((i) => task.tokenizer.encode(` ${entity(i.query)}`).length);
      return { train: count('train'), heldOut: count('heldOut') };
    };
    const on = tokens(true);
    expect([...on.train, ...on.heldOut].every((n) => n === 1), JSON.stringify(on)).toBe(true);
    const off = tokens(false);
    expect(off.train.every((n) => n === 1), JSON.stringify(off)).toBe(true);
    expect(Math.min(...off.heldOut), JSON.stringify(off)).toBeGreaterThan(1);
  });

  it('with the converter named unit_convert, gives every tool a name whose first token is its own, so one token chooses the tool', () => {
    for (const arithmetic of ['calculator', 'python'] as const) {
      const task = toolTask({ seed: 1, arithmetic, converterName: 'unit_convert', trainPerKind: 2, heldOutPerKind: 1 });
      const first = task.cards.map((c) => task.tokenizer.encode(c.name)[0]);
      expect(new Set(first).size, task.cards.map((c) => c.name).join(', ')).toBe(task.cards.length);
    }
    // The default names do not: calculator and convert both begin with 'c'.
    const v1 = toolTask({ seed: 1, converterName: 'convert', trainPerKind: 2, heldOutPerKind: 1 });
    expect(new Set(v1.cards.map((c) => v1.tokenizer.encode(c.name)[0])).size).toBe(v1.cards.length - 1);
  });
});
