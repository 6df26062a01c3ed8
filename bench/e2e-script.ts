// What the end-to-end benchmark's agent says and does: one query, the scripted text of each module's call
// (text the agent loop accepts, so every rollout plays whole turns) and a scripted tool. The tools shown to
// the planner are `cli train`'s defaults (python, base_generator) with their real cards, so prompts are as
// long as a real run's. Replies vary with the call's index, as sampled text would: the group's rollouts share
// the query and their first planner prompt, then their memories (sub-goals, code) differ, as they do in a
// real run, so later prompts are not shared whole.
import type { ModuleName } from '../src/agent/prompts';
import type { TrainingItem } from '../src/trainer/run/agent-collector';
import { BASE_GENERATOR_CARD, PYTHON_CARD } from '../src/tools/cards';
import type { Tool, ToolCard } from '../src/tools/tool';

export const E2E_ITEM: TrainingItem = {
  query: 'A train leaves Zurich at 9:40 and reaches Milan at 13:05 the same day. How many minutes does the trip take?',
  answer: '205',
};

const json = (o: unknown) => JSON.stringify(o);

/**
 * The module's `index`-th reply. The verifier always says CONTINUE: the loop asks it after every turn but
 * the last, so each rollout plays its full turn budget. Generator answers alternate right / wrong, so a
 * group's rewards are half 1, half 0 and its advantages are non-zero (the update does its full work).
 */
export function e2eReply(module: ModuleName, index: number): string {
  switch (module) {
    case 'analysis':
      return 'The query asks for the length of a trip in minutes. It needs the difference between two clock times on the same day. The python tool can compute it exactly.';
    case 'planner':
      return json({
        justification: `Exact arithmetic on clock times is python's job (attempt ${index + 1}).`,
        context: 'Departure 9:40, arrival 13:05, same day.',
        sub_goal: `Compute the minutes from 9:40 to 13:05, check ${index + 1}.`,
        tool_name: 'python',
      });
    case 'executor':
      return json({ args: { code: `start = 9 * 60 + 40\nend = 13 * 60 + 5\nprint(end - start)  # check ${index + 1}` } });
    case 'verifier':
      return json({ explanation: `The result should be checked once more (review ${index + 1}).`, verdict: 'CONTINUE' });
    case 'generator':
      return index % 2 === 0 ? 'From 9:40 to 13:05 is 3 hours and 25 minutes.\n<answer>205</answer>' : 'From 9:40 to 13:05 is 3 hours and 35 minutes.\n<answer>215</answer>';
  }
}

/** A tool with a real card that answers every call with `output` at once. */
export function scriptedTool(card: ToolCard, output: string): Tool {
  return {
    card,
    async run() {
      return { ok: true, output };
    },
  };
}

/** The tools of the benchmark's rollouts: python answers as the real one would for the scripted code. */
export function e2eTools(): Tool[] {
  return [scriptedTool(PYTHON_CARD, '205\n'), scriptedTool(BASE_GENERATOR_CARD, 'The trip takes 3 hours and 25 minutes.')];
}
