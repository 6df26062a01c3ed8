// Agent rollouts -> turn samples on the scripted demo engines (no model): G runs per query, every planner
// call becomes a sample with the run's reward and the engine's token ids and logprobs, and a Flow-GRPO
// step consumes them.
import { describe, expect, it } from 'vitest';
import { demoEngines } from '../agent/demo';
import { scriptedTokenIds } from '../agent/scripted-engine';
import type { Tool } from '../tools/types';
import { Rng } from '../util/rng';
import { AgentRolloutSource } from './agent-source';
import { groupAdvantages } from './advantages';

const reverse: Tool = {
  card: {
    name: 'reverse',
    description: 'Reverses text.',
    input: { type: 'object', properties: { text: { type: 'string', description: 'text to reverse' } }, required: ['text'] },
    output: 'the reversed text',
    limitations: [],
    examples: [{ goal: 'reverse abc', args: { text: 'abc' } }],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: [...String(args.text)].reverse().join('') };
  },
};

describe('AgentRolloutSource', () => {
  it('plays G rollouts per query and returns planner turns with rewards and sampling logprobs', async () => {
    const engines = demoEngines();
    const seen: Array<{ text: string; groupId: string }> = [];
    const src = new AgentRolloutSource({
      runId: 'run',
      items: [
        { query: 'stressed', reference: 'desserts' },
        { query: 'abc', reference: 'xyz' },
      ],
      tools: [reverse],
      engines,
      queriesPerStep: 2,
      groupSize: 3,
      temperature: 0.7,
      reward: (item, run) => ((run.answer ?? '').includes(String(item.reference)) ? 1 : 0),
      onPlannerCall: (c, ids) => void seen.push({ text: c.result.text, groupId: ids.groupId }),
    });
    const { samples } = await src.collect(1, new Rng(1));
    expect(src.lastReport).toEqual({ rollouts: 6, plannerCalls: 6, skippedCalls: 0, errors: 0 });
    expect(samples.length).toBe(6);
    const byItem = (suffix: string) => samples.filter((s) => s.groupId.endsWith(suffix));
    expect(byItem('item0').length).toBe(3);
    expect(byItem('item0').every((s) => s.reward === 1)).toBe(true); // 'stressed' reversed is 'desserts'
    expect(byItem('item1').every((s) => s.reward === 0)).toBe(true);
    for (const s of samples) {
      expect(s.responseTokens.length).toBeGreaterThan(10);
      expect(s.oldLogprobs!.length).toBe(s.responseTokens.length);
      expect(s.turn).toBe(1);
    }
    // The planner sampled at the trainer's temperature with a distinct seed per rollout.
    const opts = engines.planner.calls.map((c) => c.options);
    expect(opts.every((o) => o.temperature === 0.7)).toBe(true);
    expect(new Set(opts.map((o) => o.seed)).size).toBe(6);
    // Each sample holds exactly the ids of the planner's reply, in call order, in its group.
    samples.forEach((s, i) => {
      expect(s.responseTokens).toEqual(scriptedTokenIds(seen[i].text));
      expect(s.groupId).toBe(seen[i].groupId);
      expect(s.promptTokens.length).toBeGreaterThan(0);
    });
    // Deterministic demo engines: each group's rewards are all equal, so both groups give no gradient.
    expect(groupAdvantages(samples).noGradientGroups).toBe(2);
  });
});
