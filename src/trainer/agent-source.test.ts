// Agent rollouts -> turn samples on the scripted demo engines (no model): G runs per query, every planner
// call becomes a sample with the run's reward and the engine's token ids and logprobs, and a Flow-GRPO
// step consumes them.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { demoEngines } from '../agent/demo';
import type { AgentRunResult } from '../agent/loop';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import { scriptedTokenIds, sleep } from '../agent/scripted-engine';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/types';
import type { Tool } from '../tools/types';
import { Rng } from '../util/rng';
import { AgentRolloutSource, type AgentRolloutSourceOptions } from './agent-source';
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

/** The planner's reply for a seed: an odd seed reverses the query, an even one its upper case (a wrong answer). */
function plannerReply(query: string, seed: number): string {
  return JSON.stringify({ justification: `seed ${seed}`, context: '', sub_goal: seed % 2 ? query : query.toUpperCase(), tool_name: 'reverse' });
}

// Replies that depend only on the call (the planner's on its seed), never on call order, so rollouts
// interleaved by concurrency get the replies they would get one at a time. Odd seeds reply more slowly.
const byCall: ProbeReplyFn = (module, messages, options) => {
  const user = messages[messages.length - 1].content;
  const query = /^Query: (.*)$/m.exec(user)?.[1] ?? '';
  switch (module) {
    case 'planner':
      return { text: plannerReply(query, options.seed!), delayMs: options.seed! % 2 ? 12 : 2 };
    case 'executor':
      return JSON.stringify({ args: { text: /^Sub-goal: (.*)$/m.exec(user)?.[1] ?? '' } });
    case 'verifier':
      return '{"explanation": "done", "verdict": "STOP"}';
    case 'generator':
      return `From the tool: ${/Result: (.*)/.exec(user)?.[1] ?? 'nothing'}`;
    default:
      return 'Reverse it.';
  }
};

const items = [
  { query: 'stressed', reference: 'desserts' },
  { query: 'abc', reference: 'cba' },
];

function source(engine: ProbeEngine, o: Partial<AgentRolloutSourceOptions> = {}) {
  return new AgentRolloutSource({
    runId: 'run',
    items,
    tools: [reverse],
    engines: { planner: engine, shared: engine },
    queriesPerStep: 2,
    groupSize: 3,
    temperature: 1,
    reward: (item, run) => ((run.answer ?? '').includes(String(item.reference)) ? 1 : 0),
    ...o,
  });
}

describe('AgentRolloutSource with concurrent rollouts', () => {
  it('gives the same seeds, samples and report with 3 rollouts at once as one at a time', async () => {
    const one = new ProbeEngine(byCall);
    const three = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    const a = source(one);
    const b = source(three, { concurrency: 3 });
    const ra = await a.collect(4, new Rng(9));
    const rb = await b.collect(4, new Rng(9));
    expect(one.maxInFlight).toBe(1);
    expect(three.maxInFlight).toBeGreaterThan(1);
    expect(rb.samples).toEqual(ra.samples);
    expect(b.lastReport).toEqual({ rollouts: 6, plannerCalls: 6, skippedCalls: 0, errors: 0 });
    expect(b.lastReport).toEqual(a.lastReport);
    // Independently: the item shuffle's one draw, then three seeds per group in rollout order.
    const rng = new Rng(9);
    const order = rng.int(2) === 0 ? [1, 0] : [0, 1];
    const expected = order.flatMap((item) =>
      [0, 1, 2].map((g) => {
        const seed = rng.int(2 ** 31);
        const groupId = `run:step4:item${item}`;
        const reward = seed % 2 ? 1 : 0;
        return { groupId, rolloutId: `${groupId}:r${g}`, turn: 1, reward, responseTokens: scriptedTokenIds(plannerReply(items[item].query, seed)) };
      }),
    );
    expect(rb.samples.map((s) => ({ groupId: s.groupId, rolloutId: s.rolloutId, turn: s.turn, reward: s.reward, responseTokens: s.responseTokens }))).toEqual(expected);
  });

  it('keeps the other rollouts of a group when one ends in error', async () => {
    const clean = await source(new ProbeEngine(byCall), { concurrency: 3 }).collect(1, new Rng(2));
    const engine = new ProbeEngine(byCall, 'probe', { overlapCalls: 2 });
    const src = source(engine, {
      concurrency: 3,
      onPlannerCall: (c) => {
        if (c.conversationId.endsWith(':r1')) throw new Error('store full');
      },
    });
    const { samples } = await src.collect(1, new Rng(2));
    expect(engine.maxInFlight).toBeGreaterThan(1);
    expect(src.lastReport).toEqual({ rollouts: 6, plannerCalls: 6, skippedCalls: 0, errors: 2 });
    const failed = (s: { rolloutId: string }) => s.rolloutId.endsWith(':r1');
    expect(samples.filter((s) => !failed(s))).toEqual(clean.samples.filter((s) => !failed(s)));
    // The failed runs have no answer: reward 0.
    expect(samples.filter(failed).map((s) => s.reward)).toEqual([0, 0]);
  });

  it('starts no rollout after the signal aborts', async () => {
    const engine = new ProbeEngine(byCall);
    engine.hold();
    const ctl = new AbortController();
    const src = source(engine, { concurrency: 2, signal: ctl.signal });
    const collecting = src.collect(1, new Rng(3));
    while (engine.inFlight < 2) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    const { samples } = await collecting;
    expect(samples).toEqual([]);
    expect(src.lastReport).toEqual({ rollouts: 2, plannerCalls: 0, skippedCalls: 0, errors: 0 });
    expect(engine.calls.map((c) => c.module)).toEqual(['analysis', 'analysis']);
  });

  it('rejects a concurrency that is not a positive integer', () => {
    for (const bad of [0, -1, 2.5]) expect(() => source(new ProbeEngine(byCall), { concurrency: bad })).toThrow(`agent rollouts: concurrency must be a positive integer, got ${bad}`);
  });
});

/** A ProbeEngine that records what it is told about concurrent calls (as the planner's batcher is told). */
class AnnouncedProbe extends ProbeEngine {
  readonly announced: number[] = [];
  expectConcurrentCalls(n: number): void {
    this.announced.push(n);
  }
}

describe('AgentRolloutSource telling the planner how many rollouts run', () => {
  it('announces the rollouts of each group that may still plan to the planner engine only', async () => {
    const planner = new AnnouncedProbe(byCall, 'planner');
    const shared = new AnnouncedProbe(byCall, 'shared');
    await source(planner, { engines: { planner, shared }, concurrency: 3 }).collect(1, new Rng(5));
    // Per group of 3 run 3 at a time: 3 at the start, then 2 and 1 as the first two finish their turns
    // (each verifier says STOP after one turn) and only answer; the third has nobody to wait for.
    expect(planner.announced).toEqual([3, 2, 1, 3, 2, 1]);
    expect(shared.announced).toEqual([]);

    // One at a time there is nothing to wait for: the planner is told nothing.
    const one = new AnnouncedProbe(byCall, 'planner');
    await source(one, { engines: { planner: one, shared } }).collect(1, new Rng(5));
    expect(one.announced).toEqual([]);
  });
});

/** Serves one call at a time in arrival order, each taking `ms` (web-llm serialises its calls like this). */
class SerialEngine implements ChatEngine {
  private queue: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly inner: ChatEngine,
    private readonly ms: number,
    readonly id = 'serial',
  ) {}

  chat(messages: ChatMessage[], options: GenerateOptions = {}): Promise<GenerationResult> {
    const turn = this.queue.then(async () => {
      options.signal?.throwIfAborted();
      await sleep(this.ms, options.signal);
      return this.inner.chat(messages, options);
    });
    this.queue = turn.catch(() => undefined);
    return turn;
  }
}

describe('AgentRolloutSource time budget with concurrent rollouts', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /**
   * One step of 2 groups of 3 on a shared engine taking 100 ms per call, one call at a time, with a 400 ms
   * budget: alone, a rollout's turn (analysis, planner, executor, verifier) takes about 300 ms.
   */
  async function collect(concurrency: number, sharedMs = 100) {
    vi.useFakeTimers();
    const runs: AgentRunResult[] = [];
    const shared = new SerialEngine(new ProbeEngine(byCall), sharedMs);
    const src = source(new ProbeEngine(byCall), {
      engines: { planner: new ProbeEngine(byCall), shared },
      agent: { timeBudgetMs: 400 },
      concurrency,
      reward: (item, run) => {
        runs.push(run);
        return (run.answer ?? '').includes(String(item.reference)) ? 1 : 0;
      },
    });
    const collecting = src.collect(2, new Rng(4));
    await vi.runAllTimersAsync();
    const { samples } = await collecting;
    return { samples, runs };
  }

  /** Fake ms from a rollout's start (its first step's) to the end of its last step before the answer. */
  const turnsSpan = (run: AgentRunResult) => {
    const turns = run.steps.filter((s) => s.kind !== 'generator');
    return turns[turns.length - 1].endedAt - run.steps[0].startedAt;
  };

  it('does not cut a rollout for the time it waited behind the others’ calls (3 at once get 3 x the budget)', async () => {
    const alone = await collect(1);
    const together = await collect(3);
    expect(alone.runs.map((r) => r.stopReason)).toEqual(Array(6).fill('verifier'));
    expect(Math.max(...alone.runs.map(turnsSpan))).toBeLessThan(400);
    // Waiting for the others' calls, the last rollout of each group needs more than its 400 ms alone ...
    expect(Math.max(...together.runs.map(turnsSpan))).toBeGreaterThan(400);
    // ... and still ends by the verifier, with the samples and rewards it gets one at a time.
    expect(together.runs.map((r) => r.stopReason)).toEqual(Array(6).fill('verifier'));
    expect(together.samples).toEqual(alone.samples);
    expect(together.samples.map((s) => s.reward)).toEqual(alone.samples.map((s) => s.reward));
  });

  it('still cuts a rollout that runs past 3 x the budget, at exactly that time', async () => {
    // 500 ms per shared call: the analysis alone of the third rollout ends after 1,500 ms of 1,200.
    const { runs } = await collect(3, 500);
    expect(runs.map((r) => r.stopReason)).toEqual(Array(6).fill('time-budget'));
    // A group's 3 rollouts start together, when its first one's analysis step starts (the others' were cut
    // before they could be written); each answers from the moment its budget ran out.
    for (const group of [runs.slice(0, 3), runs.slice(3)]) {
      const start = Math.min(...group.flatMap((r) => r.steps.filter((s) => s.kind !== 'generator').map((s) => s.startedAt)));
      expect(group.map((r) => r.steps.find((s) => s.kind === 'generator')!.startedAt - start)).toEqual([1200, 1200, 1200]);
    }
    expect(runs[2].steps.map((s) => s.kind)).toEqual(['generator']);
  });
});
