// Orchestration of the turn loop on scripted engines and small in-test tools.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { StepRecord } from '../store/records';
import { ToolRegistry } from '../tools/registry';
import type { Tool, ToolContext, ToolResult } from '../tools/tool';
import { chatStream } from '../engine/chat-stream';
import { runAgent, stateFromSteps, type AgentConfigInput, type PlannerCall } from './loop';
import { toolsFromRegistry } from './registry-tools';
import { ScriptedEngine, scriptedLogprob, scriptedTokenIds, type Script } from './scripted-engine';
import { adderTool as adder, testCard as card } from '../../tests/support/test-tools';

const capitals: Record<string, string> = { France: 'Paris', Peru: 'Lima' };
const lookup: Tool = {
  card: card('Capital_Lookup_Tool', { country: { type: 'string', description: 'country' } }, ['country']),
  async run(args) {
    const c = capitals[String(args.country)];
    return c ? { ok: true, output: `The capital of ${args.country} is ${c}.` } : { ok: false, output: '', error: `unknown country ${args.country}` };
  },
};

const broken: Tool = {
  card: card('Broken_Tool', { x: { type: 'string', description: 'x' } }, ['x']),
  async run() {
    throw new Error('disk on fire');
  },
};

/** Never finishes and ignores its signal: the executor must abandon it. */
const stuck: Tool = {
  card: card('Stuck_Tool', { x: { type: 'string', description: 'x' } }, ['x']),
  run: () => new Promise<ToolResult>(() => undefined),
};

/** Finishes only when aborted, recording the signal it was given. */
function waitingTool(log: { ctx?: ToolContext }): Tool {
  return {
    card: card('Waiting_Tool', { x: { type: 'string', description: 'x' } }, ['x']),
    run: (_args, ctx) =>
      new Promise<ToolResult>((_, reject) => {
        log.ctx = ctx;
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      }),
  };
}

const TOOLS = [adder, lookup, broken, stuck];

const plan = (sub_goal: string, tool_name: string) => JSON.stringify({ justification: 'j', context: 'c', sub_goal, tool_name });

function engines(script: Script, plannerAdapter: string | null = 'lora-1') {
  const planner = new ScriptedEngine({ planner: script.planner }, 'planner:test', plannerAdapter);
  const shared = new ScriptedEngine({ ...script, planner: undefined }, 'shared:test');
  return { planner, shared };
}

class ArraySink {
  steps: StepRecord[] = [];
  async write(s: StepRecord) {
    this.steps.push(structuredClone(s));
  }
}

const kinds = (steps: StepRecord[]) => steps.map((s) => (s.kind === 'error' ? `error:${s.data.module}` : s.kind) + `@${s.turn}`);

describe('runAgent', () => {
  it('runs analysis, one tool turn, STOP and the generator, writing every step and planner call', async () => {
    const e = engines({
      analysis: ['Needs an addition.'],
      planner: [plan('Add 19 and 23', 'Adder_Tool')],
      executor: ['{"args": {"a": 19, "b": "23"}}'],
      verifier: ['{"explanation": "we have the sum", "verdict": "STOP"}'],
      generator: [(m) => `The sum is ${/Result: (\d+)/.exec(m[1].content)?.[1]}. <answer>${/Result: (\d+)/.exec(m[1].content)?.[1]}</answer>`],
    });
    const sink = new ArraySink();
    const calls: PlannerCall[] = [];
    const r = await runAgent({
      conversationId: 'c1',
      query: 'What is 19 + 23?',
      tools: TOOLS,
      engines: e,
      sink,
      onPlannerCall: (c) => void calls.push(c),
      config: { answerTags: true },
    });
    expect(r.status).toBe('done');
    expect(r.stopReason).toBe('verifier');
    expect(r.finalAnswer).toBe('42'); // computed by the tool, passed through the generator's prompt
    expect(kinds(r.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'generator@1']);
    expect(sink.steps).toEqual(r.steps);
    expect(r.steps.map((s) => s.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(r.memory).toEqual([{ turn: 1, subGoal: 'Add 19 and 23', toolName: 'Adder_Tool', args: { a: 19, b: 23 }, result: '42', ok: true }]);
    const exec = r.steps[2].data;
    expect(exec).toMatchObject({ ok: true, result: '42', errorKind: null, parseMethod: 'json', engineId: 'shared:test' });
    // Planner call: exact prompt ids and sampled ids/logprobs from the engine, adapter id, parsed action.
    expect(calls).toHaveLength(1);
    const pc = calls[0];
    expect(pc.result.promptTokens).toEqual(scriptedTokenIds(ScriptedEngine.renderPrompt(pc.messages)));
    expect(pc.result.tokens).toEqual(scriptedTokenIds(plan('Add 19 and 23', 'Adder_Tool')));
    expect(pc.result.logprobs[5]).toBe(scriptedLogprob(pc.result.tokens[5], 5));
    expect(pc.result.adapterId).toBe('lora-1');
    expect(r.steps[1].data).toMatchObject({ adapterId: 'lora-1', toolMatch: 'exact', promptTokenCount: pc.result.promptTokens.length });
    // Modules ran on the engines the config names.
    expect(e.planner.calls.map((c) => c.module)).toEqual(['planner']);
    expect(e.shared.calls.map((c) => c.module)).toEqual(['analysis', 'executor', 'verifier', 'generator']);
    expect(e.shared.calls[2].messages[1].content).toContain('Result: 42');
    expect(e.planner.calls[0].messages[1].content).toContain('Query analysis: Needs an addition.');
  });

  it('tags each streamed piece with its module and turn, and passes every piece on before its step is written', async () => {
    const e = engines({
      analysis: ['Two additions, one after the other.'],
      planner: [plan('Add 1 and 2', 'Adder_Tool'), plan('Add 3 and 4', 'Adder_Tool')],
      executor: ['{"args": {"a": 1, "b": 2}}', '{"args": {"a": 3, "b": 4}}'],
      verifier: ['{"verdict": "CONTINUE"}', '{"explanation": "both sums", "verdict": "STOP"}'],
      generator: ['The sums are 3 and 7.'],
    });
    const events: string[] = [];
    const pieces = new Map<string, string[]>();
    const sink = {
      async write(step: StepRecord) {
        events.push(`step ${step.kind}@${step.turn}`);
      },
    };
    const r = await runAgent({
      conversationId: 'tags',
      query: 'q',
      tools: TOOLS,
      engines: e,
      sink,
      onToken: (module, turn, piece) => {
        const key = `${module}@${turn}`;
        if (events.at(-1) !== `pieces ${key}`) events.push(`pieces ${key}`);
        pieces.set(key, [...(pieces.get(key) ?? []), piece]);
      },
    });
    expect(r.status).toBe('done');
    const stepKeys = r.steps.map((s) => `${s.kind}@${s.turn}`);
    expect(stepKeys).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2', 'executor@2', 'verifier@2', 'generator@2']);
    // Each call's pieces, all of them, then its step: nothing of a call arrives after its step or another call's.
    expect(events).toEqual(stepKeys.flatMap((k) => [`pieces ${k}`, `step ${k}`]));
    for (const s of r.steps) {
      const text = String(s.kind === 'analysis' || s.kind === 'generator' ? s.data.text : s.data.raw);
      // The scripted engine streams 8 characters at a time: the pieces come as the engine made them.
      expect(pieces.get(`${s.kind}@${s.turn}`), `${s.kind}@${s.turn}`).toEqual(text.match(/[^]{1,8}/g));
    }
  });

  it('says when it is done with the planner engine: after its last turn, before the generator, unless the generator runs there', async () => {
    const script: Script = {
      analysis: ['Two additions.'],
      planner: [plan('Add 1 and 2', 'Adder_Tool'), plan('Add 3 and 4', 'Adder_Tool')],
      executor: ['{"args": {"a": 1, "b": 2}}', '{"args": {"a": 3, "b": 4}}'],
      verifier: ['{"verdict": "CONTINUE"}', '{"verdict": "STOP"}'],
      generator: ['<answer>3, 7</answer>'],
    };
    const e = engines(script);
    const seen: Array<{ planner: number; shared: string[] }> = [];
    const onPlannerDone = () => void seen.push({ planner: e.planner.calls.length, shared: e.shared.calls.map((c) => c.module) });
    const r = await runAgent({ conversationId: 'pd', query: 'q', tools: TOOLS, engines: e, config: { answerTags: true }, onPlannerDone });
    expect(r.finalAnswer).toBe('3, 7');
    expect(seen).toEqual([{ planner: 2, shared: ['analysis', 'executor', 'verifier', 'executor', 'verifier'] }]);

    // With the generator on the planner engine, the run is never done with it before it ends.
    const g = engines(script);
    const told: number[] = [];
    const onGenerator = await runAgent({
      conversationId: 'pd2',
      query: 'q',
      tools: TOOLS,
      engines: { planner: new ScriptedEngine({ planner: script.planner, generator: script.generator }, 'planner:test'), shared: g.shared },
      config: { answerTags: true, engineFor: { generator: 'planner' } },
      onPlannerDone: () => void told.push(1),
    });
    expect(onGenerator.finalAnswer).toBe('3, 7');
    expect(told).toEqual([]);
    // The same when one engine object serves as both.
    const one = new ScriptedEngine(script, 'one:test');
    const both = await runAgent({ conversationId: 'pd3', query: 'q', tools: TOOLS, engines: { planner: one, shared: one }, config: { answerTags: true }, onPlannerDone: () => void told.push(1) });
    expect(both.finalAnswer).toBe('3, 7');
    expect(told).toEqual([]);
  });

  it('takes a time budget too long for a timer (Infinity, or over 2^31 - 1 ms) as no limit, not as one that runs out at once', async () => {
    vi.useFakeTimers();
    try {
      for (const timeBudgetMs of [2 ** 31, Number.POSITIVE_INFINITY, 2 ** 31 - 1]) {
        const e = engines({
          analysis: [{ text: 'slow', delayMs: 10 }],
          planner: [plan('Add 1 and 2', 'Adder_Tool')],
          executor: ['{"args": {"a": 1, "b": 2}}'],
          verifier: ['{"verdict": "STOP"}'],
          generator: ['<answer>3</answer>'],
        });
        const running = runAgent({ conversationId: 'long', query: 'q', tools: TOOLS, engines: e, config: { answerTags: true, timeBudgetMs } });
        await vi.advanceTimersByTimeAsync(20);
        const r = await running;
        expect([timeBudgetMs, r.stopReason, r.finalAnswer]).toEqual([timeBudgetMs, 'verifier', '3']);
        expect(vi.getTimerCount()).toBe(0);
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("shares a group's greedy analysis: one engine call, the same text and steps for every rollout", async () => {
    const script = {
      analysis: ['Needs an addition.'],
      planner: [plan('Add 19 and 23', 'Adder_Tool')],
      executor: ['{"args": {"a": 19, "b": 23}}'],
      verifier: ['{"verdict": "STOP"}'],
      generator: ['<answer>42</answer>'],
    };
    const e = engines(script);
    const shared = new Map();
    const run = (i: number, o: Partial<Parameters<typeof runAgent>[0]> = {}) =>
      runAgent({ conversationId: `c${i}`, query: 'What is 19 + 23?', tools: TOOLS, engines: e, config: { answerTags: true }, sharedAnalysis: shared, ...o });
    const rs = await Promise.all([run(1), run(2), run(3)]);
    expect(e.shared.count('analysis')).toBe(1);
    for (const r of rs) {
      expect(r.analysis).toBe('Needs an addition.');
      expect(kinds(r.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'generator@1']);
    }
    expect(rs.map((r) => r.steps[0].data.sharedWithGroup ?? false)).toEqual([false, true, true]);
    // A later rollout of the group reuses it too; a sampled analysis is never shared.
    await run(4);
    expect(e.shared.count('analysis')).toBe(1);
    await run(5, { config: { answerTags: true, generation: { analysis: { temperature: 0.7, seed: 1 } } } });
    expect(e.shared.count('analysis')).toBe(2);

    // The rollout that made the call aborts: the others do not inherit its abort, they ask on their own.
    const e2 = engines({ ...script, analysis: [{ text: 'Too late.', delayMs: 60_000 }, 'Fresh analysis.'] });
    const map2 = new Map();
    const ac = new AbortController();
    const owner = runAgent({ conversationId: 'o', query: 'q', tools: TOOLS, engines: e2, signal: ac.signal, sharedAnalysis: map2 });
    await new Promise((r) => setTimeout(r, 0));
    const other = runAgent({ conversationId: 'p', query: 'q', tools: TOOLS, engines: e2, sharedAnalysis: map2 });
    await new Promise((r) => setTimeout(r, 0));
    ac.abort();
    expect((await owner).status).toBe('interrupted');
    const r2 = await other;
    expect(r2.analysis).toBe('Fresh analysis.');
    expect(e2.shared.count('analysis')).toBe(2);
  });

  it('continues while the verifier says CONTINUE and shows earlier results to the planner', async () => {
    const e = engines({
      analysis: ['Two lookups.'],
      planner: [plan('Capital of France', 'Capital_Lookup_Tool'), plan('Capital of Peru', 'Capital_Lookup_Tool')],
      executor: ['{"args": {"country": "France"}}', '{"country": "Peru"}'],
      verifier: ['Still need Peru. CONTINUE', 'Both known. STOP'],
      generator: ['Paris and Lima'],
    });
    const r = await runAgent({ conversationId: 'c2', query: 'Capitals of France and Peru?', tools: TOOLS, engines: e });
    expect(r.status).toBe('done');
    expect(r.turns).toBe(2);
    expect(r.memory.map((m) => m.result)).toEqual(['The capital of France is Paris.', 'The capital of Peru is Lima.']);
    expect(e.planner.calls[1].messages[1].content).toContain('The capital of France is Paris.');
    expect(e.planner.calls[1].messages[1].content).toContain('step 2 of at most 10');
    expect(r.steps.filter((s) => s.kind === 'verifier').map((s) => s.data.verdict)).toEqual(['CONTINUE', 'STOP']);
  });

  it('records an unusable planner output as an error step and goes on', async () => {
    const e = engines({
      analysis: ['x'],
      planner: ['I love this question!!!', plan('Add 1 and 2', 'Adder_Tool')],
      executor: ['{"a": 1, "b": 2}'],
      verifier: ['{"verdict": "STOP"}'],
      generator: ['3'],
    });
    const calls: PlannerCall[] = [];
    const r = await runAgent({ conversationId: 'c3', query: '1+2?', tools: TOOLS, engines: e, onPlannerCall: (c) => void calls.push(c) });
    expect(r.status).toBe('done');
    expect(kinds(r.steps)).toEqual(['analysis@0', 'error:planner@1', 'planner@2', 'executor@2', 'verifier@2', 'generator@2']);
    expect(r.steps[1].data).toMatchObject({ errorKind: 'unusable-output', raw: 'I love this question!!!' });
    expect(r.memory[0]).toMatchObject({ turn: 1, ok: false, error: 'planner: planner output has no usable sub_goal and tool_name' });
    expect(r.memory[1]).toMatchObject({ turn: 2, result: '3', ok: true });
    expect(e.planner.calls[1].messages[1].content).toContain('Error: planner: planner output has no usable');
    // The unusable output is still a planner call that training must see.
    expect(calls.map((c) => [c.turn, c.parsed.ok])).toEqual([[1, false], [2, true]]);
  });

  it('fuzzy-matches a misspelt tool and records a tool-calling error for an unknown one', async () => {
    const e = engines({
      analysis: ['x'],
      planner: [plan('Use teleporter', 'Teleport_Tool'), plan('Add 2 and 2', 'adder')],
      executor: ['{"a": 2, "b": 2}'],
      verifier: ['CONTINUE', 'STOP'],
      generator: ['4'],
    });
    const r = await runAgent({ conversationId: 'c4', query: '2+2?', tools: TOOLS, engines: e });
    expect(r.status).toBe('done');
    expect(r.steps[1].data).toMatchObject({ resolvedTool: null, toolMatch: 'none' });
    expect(r.steps[2].data).toMatchObject({ errorKind: 'unknown-tool', ok: false });
    expect(r.memory[0].error).toBe("tool-calling error: no tool named 'Teleport_Tool'; available: Adder_Tool, Capital_Lookup_Tool, Broken_Tool, Stuck_Tool");
    expect(r.steps[4].data).toMatchObject({ resolvedTool: 'Adder_Tool', toolMatch: 'fuzzy' });
    expect(r.memory[1]).toMatchObject({ toolName: 'Adder_Tool', result: '4', ok: true });
    expect(e.shared.count('executor')).toBe(1); // no executor call for the unknown tool
  });

  it('records bad arguments, tool errors, thrown tools and timeouts in memory, and keeps going', async () => {
    const e = engines({
      analysis: ['x'],
      planner: [plan('a', 'Adder_Tool'), plan('b', 'Capital_Lookup_Tool'), plan('c', 'Broken_Tool'), plan('d', 'Stuck_Tool')],
      executor: ['{"a": "one", "b": 2}', '{"country": "Atlantis"}', '{"x": "y"}', '{"x": "y"}'],
      verifier: ['CONTINUE'],
      generator: ['I could not find it.'],
    });
    const r = await runAgent({ conversationId: 'c5', query: 'q', tools: TOOLS, engines: e, config: { maxTurns: 4, toolTimeoutMs: 30 } });
    expect(r.status).toBe('done');
    expect(r.stopReason).toBe('turn-budget');
    const execs = r.steps.filter((s) => s.kind === 'executor').map((s) => s.data.errorKind);
    expect(execs).toEqual(['bad-arguments', 'tool-error', 'tool-error', 'timeout']);
    expect(r.memory.map((m) => m.error)).toEqual([
      "tool-calling error: tool 'Adder_Tool': field 'a' must be a number, got the string \"one\"",
      'unknown country Atlantis',
      'Broken_Tool threw: disk on fire',
      'Stuck_Tool timed out after 30 ms',
    ]);
  });

  it('applies a per-tool timeout over the default one', async () => {
    const e = engines({ analysis: ['x'], planner: [plan('d', 'Stuck_Tool')], executor: ['{"x": "y"}'], verifier: ['STOP'], generator: ['gave up'] });
    const r = await runAgent({ conversationId: 'c5b', query: 'q', tools: TOOLS, engines: e, config: { toolTimeoutMs: 600_000, toolTimeouts: { Stuck_Tool: 15 } } });
    expect(r.memory[0].error).toBe('Stuck_Tool timed out after 15 ms');
    await expect(runAgent({ conversationId: 'x', query: 'q', tools: TOOLS, engines: e, config: { toolTimeouts: { Stuck_Tool: -1 } } })).rejects.toThrow(
      "agent config: toolTimeouts['Stuck_Tool'] must be positive, got -1",
    );
  });

  it('records engine failures as error steps and continues', async () => {
    const e = engines({
      analysis: [{ throws: 'analysis engine lost' }],
      planner: [{ throws: 'GPU device lost' }, plan('Add 5 and 5', 'Adder_Tool')],
      executor: ['{"a": 5, "b": 5}'],
      verifier: [{ throws: 'verifier crashed' }, 'STOP'],
      generator: ['10'],
    });
    const r = await runAgent({ conversationId: 'c6', query: '5+5', tools: TOOLS, engines: e, config: { maxTurns: 4 } });
    expect(kinds(r.steps)).toEqual([
      'error:analysis@0', 'error:planner@1', 'planner@2', 'executor@2', 'error:verifier@2', 'planner@3', 'executor@3', 'verifier@3', 'generator@3',
    ]);
    expect((r.steps[1].data as { message?: string }).message).toBe('planner engine failed: GPU device lost');
    expect(r.answer).toBe('10');
  });

  it('stops at the turn budget without a useless last verification', async () => {
    const e = engines({ analysis: ['x'], planner: [plan('add', 'Adder_Tool')], executor: ['{"a": 1, "b": 1}'], verifier: ['CONTINUE'], generator: ['2'] });
    const r = await runAgent({ conversationId: 'c7', query: 'q', tools: TOOLS, engines: e, config: { maxTurns: 3 } });
    expect(r.stopReason).toBe('turn-budget');
    expect(r.status).toBe('done');
    expect([e.planner.count('planner'), e.shared.count('executor'), e.shared.count('verifier'), e.shared.count('generator')]).toEqual([3, 3, 2, 1]);
    expect(r.memory).toHaveLength(3);
  });

  it('numbers the answer with the last turn when the last turn’s planner call fails, also when resumed', async () => {
    const script = (): Script => ({
      analysis: ['x'],
      planner: [plan('add', 'Adder_Tool'), 'no plan at all', { throws: 'GPU device lost' }],
      executor: ['{"a": 1, "b": 1}'],
      verifier: ['CONTINUE'],
      generator: ['2'],
    });
    for (const [maxTurns, expected] of [
      [2, ['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'error:planner@2', 'generator@2']],
      [3, ['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'error:planner@2', 'error:planner@3', 'generator@3']],
    ] as const) {
      const r = await runAgent({ conversationId: `c7b-${maxTurns}`, query: 'q', tools: TOOLS, engines: engines(script()), config: { maxTurns } });
      expect(r.stopReason).toBe('turn-budget');
      expect(kinds(r.steps)).toEqual(expected);
      expect(r.turns).toBe(maxTurns);
      // Resumed from every step before the answer, the answer keeps the same number.
      const upToAnswer = r.steps.slice(0, -1);
      const resumed = await runAgent({ conversationId: `c7b-${maxTurns}`, query: 'q', tools: TOOLS, engines: engines({ generator: ['2'] }), config: { maxTurns }, resumeFrom: upToAnswer });
      expect(kinds(resumed.steps)).toEqual(expected);
    }
  });

  it('stops at the time budget, drops the step in flight, and still answers from memory', async () => {
    const e = engines({
      analysis: ['x'],
      planner: [plan('add', 'Adder_Tool'), { text: plan('never', 'Adder_Tool'), delayMs: 60_000 }],
      executor: ['{"a": 20, "b": 22}'],
      verifier: ['CONTINUE'],
      generator: [(m) => (m[1].content.includes('Result: 42') ? 'It is 42.' : 'no memory')],
    });
    const r = await runAgent({ conversationId: 'c8', query: 'q', tools: TOOLS, engines: e, config: { timeBudgetMs: 2000 } }); // ample for turn 1; the second plan stalls past it
    expect(r.stopReason).toBe('time-budget');
    expect(r.status).toBe('done');
    expect(r.answer).toBe('It is 42.');
    expect(kinds(r.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'generator@2']);
    expect(e.planner.calls[1].options.signal?.aborted).toBe(true);
  });

  it('is interruptible inside a tool call: the tool sees the abort, no answer is written', async () => {
    const log: { ctx?: ToolContext } = {};
    const e = engines({ analysis: ['x'], planner: [plan('wait', 'Waiting_Tool')], executor: ['{"x": "1"}'], verifier: ['STOP'], generator: ['never'] });
    const ctl = new AbortController();
    const sink = new ArraySink();
    const running = runAgent({ conversationId: 'c9', query: 'q', tools: [waitingTool(log)], engines: e, signal: ctl.signal, sink });
    while (!log.ctx) await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    const r = await running;
    expect(r.status).toBe('interrupted');
    expect(r.stopReason).toBe('aborted');
    expect(log.ctx.signal.aborted).toBe(true);
    expect(kinds(sink.steps)).toEqual(['analysis@0', 'planner@1']);
    expect(e.shared.count('generator')).toBe(0);
  });

  it('is interruptible inside an engine call, with a custom abort reason', async () => {
    const e = engines({ analysis: [{ text: 'slow', delayMs: 60_000 }], planner: ['x'], generator: ['never'] });
    const ctl = new AbortController();
    const running = runAgent({ conversationId: 'c10', query: 'q', tools: TOOLS, engines: e, signal: ctl.signal });
    setTimeout(() => ctl.abort('user pressed stop'), 20);
    const r = await running;
    expect(r.status).toBe('interrupted');
    expect(r.steps).toEqual([]);
  });

  it('is interruptible while the generator writes, and a resume only writes the answer', async () => {
    const script: Script = { analysis: ['x'], planner: [plan('add', 'Adder_Tool')], executor: ['{"a": 2, "b": 3}'], verifier: ['STOP'], generator: [{ text: '5', delayMs: 60_000 }] };
    const e = engines(script);
    const ctl = new AbortController();
    const sink = new ArraySink();
    const running = runAgent({ conversationId: 'g', query: 'q', tools: TOOLS, engines: e, signal: ctl.signal, sink });
    while (e.shared.count('generator') < 1) await new Promise((res) => setTimeout(res, 5));
    ctl.abort();
    const cut = await running;
    expect(cut).toMatchObject({ status: 'interrupted', stopReason: 'aborted', answer: null });
    expect(kinds(sink.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1']);
    const again = engines({ generator: ['5'] });
    const r = await runAgent({ conversationId: 'g', query: 'q', tools: TOOLS, engines: again, resumeFrom: sink.steps });
    expect(r).toMatchObject({ status: 'done', answer: '5', stopReason: 'verifier' });
    expect(again.shared.calls.map((c) => c.module)).toEqual(['generator']);
  });

  it('resumes after a reload from the stored steps, repeating only the step that was in flight', async () => {
    const script: Script = {
      analysis: ['Two lookups.'],
      planner: [plan('Capital of France', 'Capital_Lookup_Tool'), plan('Capital of Peru', 'Capital_Lookup_Tool')],
      executor: ['{"country": "France"}', '{"country": "Peru"}'],
      verifier: ['CONTINUE', { text: 'STOP', delayMs: 60_000 }],
      generator: [(m) => (m[1].content.includes('Paris') && m[1].content.includes('Lima') ? 'Paris and Lima' : 'incomplete memory')],
    };
    const sink = new ArraySink();
    const ctl = new AbortController();
    const first = engines(script);
    const running = runAgent({ conversationId: 'c11', query: 'Capitals?', tools: TOOLS, engines: first, signal: ctl.signal, sink });
    while (first.shared.count('verifier') < 2) await new Promise((r) => setTimeout(r, 5));
    ctl.abort(); // the "reload": the second verification is in flight and is lost
    const cut = await running;
    expect(cut.status).toBe('interrupted');
    expect(kinds(sink.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2', 'executor@2']);

    const st = stateFromSteps(sink.steps);
    expect(st).toMatchObject({ phase: 'verify', turn: 2, nextSeq: 6, analysis: 'Two lookups.' });
    expect(st.memory.map((m) => m.result)).toEqual(['The capital of France is Paris.', 'The capital of Peru is Lima.']);

    // A fresh engine after the reload: only the verifier (answering at once now) and generator run.
    const second = engines({ ...script, verifier: ['STOP'] });
    const stored = structuredClone(sink.steps);
    const r = await runAgent({ conversationId: 'c11', query: 'Capitals?', tools: TOOLS, engines: second, sink, resumeFrom: stored });
    expect(r.status).toBe('done');
    expect(r.answer).toBe('Paris and Lima');
    expect(second.planner.calls).toHaveLength(0);
    expect(second.shared.calls.map((c) => c.module)).toEqual(['verifier', 'generator']);
    expect(kinds(sink.steps)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2', 'executor@2', 'verifier@2', 'generator@2']);
    expect(sink.steps.map((s) => s.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('resumes a run cut after its planner step by executing that plan', async () => {
    const steps: StepRecord[] = [
      { conversationId: 'c12', seq: 0, kind: 'analysis', turn: 0, startedAt: 0, endedAt: 1, data: { text: 'a' } },
      { conversationId: 'c12', seq: 1, kind: 'planner', turn: 1, startedAt: 1, endedAt: 2, data: { raw: '', parseMethod: 'json', action: { justification: '', context: '', subGoal: 'add', toolName: 'Adder_Tool' }, resolvedTool: 'Adder_Tool' } },
    ];
    const e = engines({ executor: ['{"a": 3, "b": 4}'], verifier: ['STOP'], generator: ['7'] });
    const r = await runAgent({ conversationId: 'c12', query: 'q', tools: TOOLS, engines: e, resumeFrom: steps });
    expect(r.memory).toEqual([{ turn: 1, subGoal: 'add', toolName: 'Adder_Tool', args: { a: 3, b: 4 }, result: '7', ok: true }]);
    expect(r.answer).toBe('7');
  });

  it('returns a finished run as it stands when resumed', async () => {
    const e = engines({ analysis: ['x'], planner: [plan('add', 'Adder_Tool')], executor: ['{"a": 1, "b": 1}'], verifier: ['STOP'], generator: ['2'] });
    const done = await runAgent({ conversationId: 'c13', query: 'q', tools: TOOLS, engines: e });
    const again = engines({});
    const r = await runAgent({ conversationId: 'c13', query: 'q', tools: TOOLS, engines: again, resumeFrom: done.steps });
    expect(r.status).toBe('done');
    expect(r.answer).toBe('2');
    expect(again.shared.calls.length + again.planner.calls.length).toBe(0);
  });

  it('reports a failed generator and a failing store as errors instead of throwing', async () => {
    const e = engines({ analysis: ['x'], planner: [plan('add', 'Adder_Tool')], executor: ['{"a": 1, "b": 1}'], verifier: ['STOP'], generator: [{ throws: 'OOM' }] });
    const r = await runAgent({ conversationId: 'c14', query: 'q', tools: TOOLS, engines: e });
    expect(r).toMatchObject({ status: 'error', stopReason: 'error', error: 'generator failed: OOM' });
    expect(r.steps[r.steps.length - 1]).toMatchObject({ kind: 'error', seq: 4, data: { module: 'generator', message: 'generator failed: OOM' } });
    expect(stateFromSteps(r.steps).phase).toBe('generate'); // a resume retries the answer
    const full = { write: async () => { throw new Error('QuotaExceededError: storage full'); } };
    const r2 = await runAgent({ conversationId: 'c15', query: 'q', tools: TOOLS, engines: engines({ analysis: ['x'] }), sink: full });
    expect(r2).toMatchObject({ status: 'error', error: 'QuotaExceededError: storage full' });
  });

  it('rejects a nonsensical configuration with the setting named', async () => {
    const bad: AgentConfigInput = { maxTurns: 0 };
    await expect(runAgent({ conversationId: 'x', query: 'q', tools: TOOLS, engines: engines({}), config: bad })).rejects.toThrow('agent config: maxTurns must be a positive integer, got 0');
  });
});

describe('runAgent on random model output', () => {
  const pieces = ['{', '}', '"', ':', ',', '```json\n', '\n', 'sub_goal', 'tool_name', 'Adder_Tool', 'Capital_Lookup_Tool', 'adder', 'a', 'b', '1', 'x',
    'STOP', 'CONTINUE', '<answer>', '</answer>', 'Sub-Goal:', 'Tool:', 'country', 'France', 'null', '[', ']'];
  const rngText = (seed: number) => {
    let s = seed >>> 0;
    const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
    return () => {
      let t = '';
      const n = Math.floor(next() * 30);
      for (let i = 0; i < n; i++) t += pieces[Math.floor(next() * pieces.length)] + (next() < 0.3 ? ' ' : '');
      return t;
    };
  };

  it('always finishes within the budget with a well-formed record of every step', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const gen = rngText(seed);
      const reply = () => gen();
      const e = engines({ analysis: [reply], planner: [reply], executor: [reply], verifier: [reply], generator: [reply] });
      const r = await runAgent({ conversationId: `fuzz-${seed}`, query: 'q', tools: TOOLS, engines: e, config: { maxTurns: 4, toolTimeoutMs: 20 } });
      expect(r.status, `seed ${seed}`).toBe('done');
      expect(r.turns).toBeGreaterThanOrEqual(1);
      expect(r.turns).toBeLessThanOrEqual(4);
      expect(e.planner.count('planner')).toBe(r.turns);
      expect(r.steps.map((s) => s.seq)).toEqual(r.steps.map((_, i) => i));
      expect(r.steps[r.steps.length - 1].kind).toBe('generator');
      // The answer belongs to the last turn that was planned, never to one past the budget.
      expect(r.steps[r.steps.length - 1].turn, `seed ${seed}`).toBe(r.turns);
      // One memory entry per planned turn: a failed plan or an execution.
      expect(r.memory.map((m) => m.turn)).toEqual(Array.from({ length: r.turns }, (_, i) => i + 1));
      // The stored steps alone rebuild the same memory.
      expect(stateFromSteps(r.steps).memory).toEqual(r.memory);
    }
  }, 120_000);
});

describe('resume from any point', () => {
  // Replies depend only on the prompt, so a resumed run must reproduce the uninterrupted one exactly.
  const script: Script = {
    analysis: ['Two lookups.'],
    planner: [(m) => (m[1].content.includes('Paris') ? plan('Capital of Peru', 'Capital_Lookup_Tool') : plan('Capital of France', 'Capital_Lookup_Tool'))],
    executor: [(m) => (m[1].content.includes('Sub-goal: Capital of Peru') ? '{"country": "Peru"}' : '{"country": "France"}')],
    verifier: [(m) => (m[1].content.includes('Lima') ? 'STOP' : 'CONTINUE')],
    generator: [(m) => [...m[1].content.matchAll(/capital of \w+ is (\w+)/g)].map((x) => x[1]).join(' and ')],
  };

  it('gives the same steps, memory and answer whichever step the run was cut after', async () => {
    const full = await runAgent({ conversationId: 'r', query: 'Capitals?', tools: TOOLS, engines: engines(script), now: () => 0 });
    expect(full.answer).toBe('Paris and Lima');
    const strip = (steps: StepRecord[]) => steps.map((s) => ({ seq: s.seq, kind: s.kind, turn: s.turn, data: s.data }));
    for (let k = 0; k <= full.steps.length; k++) {
      const r = await runAgent({ conversationId: 'r', query: 'Capitals?', tools: TOOLS, engines: engines(script), resumeFrom: full.steps.slice(0, k), now: () => 0 });
      expect(r.answer, `cut after ${k} steps`).toBe('Paris and Lima');
      expect(r.memory).toEqual(full.memory);
      expect(strip(r.steps).map((s) => ({ ...s, data: { ...s.data, timings: null } }))).toEqual(
        strip(full.steps).map((s) => ({ ...s, data: { ...s.data, timings: null } })),
      );
    }
  }, 120_000);
});

function deadEngine(id: string) {
  const calls: string[] = [];
  return {
    calls,
    engine: {
      id,
      stream: (messages: import('../engine/chat-engine').ChatMessage[]) => {
        calls.push(messages[0].content.slice(0, 20));
        return chatStream(() => new Promise<import('../engine/chat-engine').GenerationResult>(() => undefined));
      },
    },
  };
}

describe('runAgent with an engine that never answers', () => {
  it('ends at Stop, interrupted, however the engine behaves', async () => {
    const dead = deadEngine('dead');
    const ctl = new AbortController();
    // With a reader of the pieces: a stream that never ends must not hold the run either.
    const running = runAgent({ conversationId: 'd1', query: 'q', tools: TOOLS, engines: { planner: dead.engine, shared: dead.engine }, signal: ctl.signal, onToken: () => undefined });
    await vi.waitFor(() => expect(dead.calls.length).toBe(1));
    ctl.abort(new DOMException('Stopped by the user', 'AbortError'));
    const r = await running;
    expect([r.status, r.stopReason]).toEqual(['interrupted', 'aborted']);
  });

  it('ends when the time budget runs out, and the generator’s own limit ends the answer', async () => {
    const dead = deadEngine('dead');
    const r = await runAgent({ conversationId: 'd2', query: 'q', tools: TOOLS, engines: { planner: dead.engine, shared: dead.engine }, config: { timeBudgetMs: 150, generatorTimeoutMs: 150 } });
    expect([r.status, r.stopReason]).toEqual(['error', 'error']);
    expect(r.error).toBe('generator failed: the generator did not answer within 150 ms (is its engine still running?)');
    // The analysis call hung until the budget, then the generator's call until its limit.
    expect(dead.calls.length).toBe(2);
  });
});
