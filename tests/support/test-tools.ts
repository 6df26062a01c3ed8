// Small tools the agent and tool tests run: real computations the tests can check, on cards built the
// same way.
import type { Tool, ToolCard } from '../../src/tools/tool';

/** A card for an in-test tool: `props` and `required` are its input schema; the rest is filler. */
export function testCard(name: string, props: ToolCard['input']['properties'], required: string[]): ToolCard {
  return { name, description: `${name} test tool.`, input: { type: 'object', properties: props, required }, output: 'text', limitations: [], examples: [], usesNetwork: false };
}

/** Adds two numbers. */
export const adderTool: Tool = {
  card: testCard('Adder_Tool', { a: { type: 'number', description: 'first' }, b: { type: 'number', description: 'second' } }, ['a', 'b']),
  async run(args) {
    return { ok: true, output: String((args.a as number) + (args.b as number)) };
  },
};

/**
 * Multiplies two numbers: the scripted and tiny-model agents get their answers from here. No examples on
 * its card, so the prompts stay short for the tiny planner (a byte tokenizer and a small context).
 */
export const multiplyTool: Tool = {
  card: {
    name: 'Multiply_Tool',
    description: 'Multiplies a by b.',
    input: { type: 'object', properties: { a: { type: 'number', description: 'a' }, b: { type: 'number', description: 'b' } }, required: ['a', 'b'] },
    output: 'the product',
    limitations: [],
    examples: [],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: String((args.a as number) * (args.b as number)) };
  },
};

/** The planner's JSON reply choosing Multiply_Tool for `subGoal`. */
export const multiplyPlan = (subGoal: string) => JSON.stringify({ justification: 'j', context: 'c', sub_goal: subGoal, tool_name: 'Multiply_Tool' });

/** A scripted generator's reply: the first tool result in its prompt's memory (messages[1]) as the answer. */
export const answerFromMemory = (m: { content: string }[]) => `<answer>${/Result: (\d+)/.exec(m[1].content)?.[1] ?? 'unknown'}</answer>`;
