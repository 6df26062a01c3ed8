// A two-turn agent run on scripted engines, shared by the agent browser test and the reload e2e page.
// The tool really computes; the scripted generator reads its answer out of the memory in its prompt.
import { ScriptedEngine, type Script } from '../../../src/agent/scripted-engine';
import type { Tool } from '../../../src/tools/tool';

export const QUERY = 'Multiply 6 by 7, then multiply the result by 10.';
export const EXPECTED_ANSWER = '420';

export const multiplyTool: Tool = {
  card: {
    name: 'Multiply_Tool',
    description: 'Multiplies a by b.',
    input: {
      type: 'object',
      properties: { a: { type: 'number', description: 'first factor' }, b: { type: 'number', description: 'second factor' } },
      required: ['a', 'b'],
    },
    output: 'the product as a decimal number',
    limitations: [],
    examples: [{ goal: 'multiply 2 by 3', args: { a: 2, b: 3 } }],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: String((args.a as number) * (args.b as number)) };
  },
};

const plan = (subGoal: string) => JSON.stringify({ justification: 'arithmetic', context: '', sub_goal: subGoal, tool_name: 'Multiply_Tool' });

/**
 * `stallSecondTurn`: the second executor call waits a minute, so a test can reload or abort the page while
 * the run is at a known step.
 */
export function scenarioScript(stallSecondTurn: boolean): Script {
  return {
    analysis: ['Two multiplications, one after the other.'],
    planner: [plan('Multiply 6 by 7'), plan('Multiply the previous result by 10')],
    executor: [
      '{"args": {"a": 6, "b": 7}}',
      stallSecondTurn ? { text: '{"args": {"a": 42, "b": 10}}', delayMs: 60_000 } : '{"args": {"a": 42, "b": 10}}',
    ],
    verifier: ['{"explanation": "need the second product", "verdict": "CONTINUE"}', '{"explanation": "done", "verdict": "STOP"}'],
    generator: [(m) => {
      const results = [...m[1].content.matchAll(/Result: (\d+)/g)].map((x) => x[1]);
      return `The final product is ${results[results.length - 1]}. <answer>${results[results.length - 1]}</answer>`;
    }],
  };
}

export function scenarioEngines(stallSecondTurn: boolean) {
  const script = scenarioScript(stallSecondTurn);
  return {
    planner: new ScriptedEngine({ planner: script.planner }, 'planner:scripted', 'lora-demo'),
    shared: new ScriptedEngine({ ...script, planner: undefined }, 'shared:scripted'),
  };
}

/** After a resume, each module's scripted list starts over: skip what the stored steps already cover. */
export function resumedEngines(completedTurns: number) {
  const script = scenarioScript(false);
  const skip = (list: Script[keyof Script]) => (list ?? []).slice(completedTurns);
  return {
    planner: new ScriptedEngine({ planner: skip(script.planner) }, 'planner:scripted', 'lora-demo'),
    shared: new ScriptedEngine(
      { analysis: script.analysis, executor: skip(script.executor), verifier: skip(script.verifier), generator: script.generator },
      'shared:scripted',
    ),
  };
}
