// The modules' reply schemas: each is a JSON Schema that XGrammar compiles (as our planner runtime compiles it,
// and as web-llm does), admits the replies the parsers read and nothing else, asks for the fields its prompt
// shows in the prompt's order; the planner's tool enum is the registry's available tools; the loop passes the
// schemas (and none with constrainReplies off); and random draws under the planner's grammar, cut off at any
// token budget that reaches the sub-goal, always parse.
import { describe, expect, it } from 'vitest';
import { SchemaGrammar } from '../engine/grammar/json-schema-constraint';
import { xgrammar } from '../engine/grammar/xgrammar-load';
import { Tokenizer } from '../engine/tokenizer/tokenizer';
import { BUILTIN_CARDS, PYTHON_CARD, WIKIPEDIA_CARD } from '../tools/cards';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import { Rng } from '../util/rng';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { adderTool, testCard } from '../../tests/support/test-tools';
import { runAgent } from './loop';
import { parsePlannerOutput, parseToolArgs, parseVerdict } from './parse';
import { executorMessages, plannerMessages, verifierMessages } from './prompts';
import { toolsFromRegistry } from './registry-tools';
import { boundedText, DEFAULT_REPLY_LIMITS, executorReplySchema, plannerReplySchema, ReplySchemas, resolveReplyLimits, verifierReplySchema } from './reply-schemas';
import { ScriptedEngine } from './scripted-engine';

/** Compiled as our runtime compiles (one line, fixed separators, strict) and as web-llm does (its defaults). */
async function grammars(schema: object) {
  const xg = await xgrammar();
  const text = JSON.stringify(schema);
  return [await xg.Grammar.fromJSONSchema(text, false, -1, [', ', ': '], true), await xg.Grammar.fromJSONSchema(text)];
}

async function accepts(schema: object, reply: string): Promise<boolean[]> {
  const xg = await xgrammar();
  return Promise.all((await grammars(schema)).map((g) => xg.Testings.isGrammarAcceptString(g, reply)));
}

const PLANNER = plannerReplySchema(['python', 'wikipedia']);

describe('reply schemas', () => {
  it('the planner: the tool is one of the enabled ones, then a non-blank bounded sub-goal, context and justification', async () => {
    expect(PLANNER).toEqual({
      type: 'object',
      properties: {
        tool_name: { type: 'string', enum: ['python', 'wikipedia'] },
        sub_goal: boundedText(DEFAULT_REPLY_LIMITS.subGoal, true),
        context: boundedText(DEFAULT_REPLY_LIMITS.context),
        justification: boundedText(DEFAULT_REPLY_LIMITS.justification),
      },
      required: ['tool_name', 'sub_goal', 'context', 'justification'],
      additionalProperties: false,
    });
    const good = '{"tool_name": "python", "sub_goal": "Compute 6*7", "context": "", "justification": "exact arithmetic"}';
    expect(await accepts(PLANNER, good)).toEqual([true, true]);
    expect(parsePlannerOutput(good)).toMatchObject({ ok: true, method: 'json', action: { toolName: 'python', subGoal: 'Compute 6*7' } });
    const bad = [
      good.replace('"python"', '"calculator"'), // not an enabled tool
      good.replace('"Compute 6*7"', '" Compute"'), // blank first character: the parser would find it empty
      good.replace('"Compute 6*7"', '""'),
      good.replace('"exact arithmetic"', `"${'x'.repeat(DEFAULT_REPLY_LIMITS.justification + 1)}"`),
      good.replace('"exact arithmetic"', '"tab\there"'), // a raw control character: JSON.parse refuses it
      good.replace('"exact arithmetic"', '"say \\"exact\\""'), // bounded fields have no escapes
      good.replace('}', ', "extra": 1}'),
      '{"sub_goal": "Compute 6*7", "tool_name": "python", "context": "", "justification": ""}', // another order
    ];
    for (const b of bad) expect(await accepts(PLANNER, b), b).toEqual([false, false]);
    // A field's bound is exact.
    expect(await accepts(PLANNER, good.replace('"exact arithmetic"', `"${'x'.repeat(DEFAULT_REPLY_LIMITS.justification)}"`))).toEqual([true, true]);
    expect(() => plannerReplySchema([])).toThrow(/no tools are enabled/);
  });

  it("the executor: exactly the card's inputs, the required ones present, of their types, enums and bounds", async () => {
    const schema = executorReplySchema(WIKIPEDIA_CARD);
    expect(schema).toEqual({
      type: 'object',
      properties: {
        args: {
          type: 'object',
          properties: { query: boundedText(200), max_results: { type: 'integer', minimum: 1, maximum: 5 } },
          required: ['query'],
          additionalProperties: false,
        },
      },
      required: ['args'],
      additionalProperties: false,
    });
    for (const ok of ['{"args": {"query": "Eiffel Tower"}}', '{"args": {"query": "Sony founders", "max_results": 2}}']) {
      expect(await accepts(schema, ok), ok).toEqual([true, true]);
      expect(parseToolArgs(ok, WIKIPEDIA_CARD)).toMatchObject({ ok: true, method: 'json' });
    }
    for (const bad of ['{"args": {"max_results": 2}}', '{"args": {"query": "x", "max_results": 6}}', '{"args": {"query": "x", "lang": "de"}}', '{"args": {"query": 3}}', '{"query": "x"}']) {
      expect(await accepts(schema, bad), bad).toEqual([false, false]);
    }
    // Code is unbounded and keeps JSON's escapes (a newline is \n in JSON).
    const code = '{"args": {"code": "x = 6 * 7\\nprint(\\"x\\", x)"}}';
    expect(await accepts(executorReplySchema(PYTHON_CARD), code)).toEqual([true, true]);
    expect(parseToolArgs(code, PYTHON_CARD)).toMatchObject({ ok: true, args: { code: 'x = 6 * 7\nprint("x", x)' } });
    const pick = testCard('Pick_Tool', { colour: { type: 'string', description: 'c', enum: ['red', 'blue'] }, n: { type: 'number', description: 'n' } }, ['colour']);
    expect(await accepts(executorReplySchema(pick), '{"args": {"colour": "red", "n": -1.5}}')).toEqual([true, true]);
    expect(await accepts(executorReplySchema(pick), '{"args": {"colour": "green"}}')).toEqual([false, false]);
    // Every built-in card's schema compiles and admits the card's own examples.
    for (const card of BUILTIN_CARDS) {
      for (const ex of card.examples) expect(await accepts(executorReplySchema(card), JSON.stringify({ args: ex.args }, null, 0).replace(/":/g, '": ').replace(/,"/g, ', "')), `${card.name} ${ex.goal}`).toEqual([true, true]);
    }
  });

  it('the verifier: a bounded explanation, then STOP or CONTINUE', async () => {
    const schema = verifierReplySchema();
    for (const v of ['STOP', 'CONTINUE']) {
      const reply = `{"explanation": "the sum is in memory", "verdict": "${v}"}`;
      expect(await accepts(schema, reply)).toEqual([true, true]);
      expect(parseVerdict(reply)).toMatchObject({ verdict: v, method: 'json' });
    }
    expect(await accepts(schema, '{"explanation": "hm", "verdict": "MAYBE"}')).toEqual([false, false]);
    expect(await accepts(schema, '{"verdict": "STOP", "explanation": "hm"}')).toEqual([false, false]);
  });

  it("each schema asks for the fields its module's prompt shows, in the prompt's order", () => {
    const keys = (template: string) => [...template.matchAll(/"([a-z_]+)":/g)].map((m) => m[1]);
    const system = (m: { content: string }[]) => m[0].content.slice(m[0].content.indexOf('{'));
    const planner = plannerMessages({ query: 'q', analysis: 'a', cards: [PYTHON_CARD], memory: [], turn: 1, maxTurns: 3 });
    expect(keys(system(planner))).toEqual(Object.keys(PLANNER.properties as object));
    const executor = executorMessages('q', { justification: '', context: '', subGoal: 's', toolName: 'python' }, PYTHON_CARD);
    expect(keys(system(executor))).toEqual(Object.keys(executorReplySchema(PYTHON_CARD).properties as object));
    expect(keys(system(verifierMessages('q', 'a', [])))).toEqual(Object.keys(verifierReplySchema().properties as object));
  });

  it('refuses limits a grammar cannot hold, naming the field', () => {
    expect(resolveReplyLimits({ subGoal: 40 })).toEqual({ ...DEFAULT_REPLY_LIMITS, subGoal: 40 });
    expect(() => resolveReplyLimits({ context: 0 })).toThrow(/replyLimits\.context must be an integer from 1 to 2000 \(characters\), got 0/);
    expect(() => resolveReplyLimits({ explanation: 2.5 })).toThrow(/replyLimits\.explanation/);
    expect(() => boundedText(0)).toThrow(/positive whole number/);
    expect(boundedText(1, true)).toEqual({ type: 'string', pattern: '^[^ "\\\\\\x00-\\x1f]$' });
  });
});

describe('the loop under reply schemas', () => {
  const doubler = (name: string, usesNetwork = false): Tool => ({
    card: { ...testCard(name, { n: { type: 'number', description: 'n' } }, ['n']), usesNetwork },
    run: async (args) => ({ ok: true, output: String((args.n as number) * 2) }),
  });

  function script() {
    return {
      analysis: ['Doubling.'],
      planner: ['{"tool_name": "Double_A", "sub_goal": "Double 21", "context": "", "justification": ""}'],
      executor: ['{"args": {"n": 21}}'],
      verifier: ['{"explanation": "done", "verdict": "STOP"}'],
      generator: ['42'],
    };
  }

  it("passes each constrained module its schema, the planner's enum being the registry's available tools", async () => {
    const registry = new ToolRegistry();
    registry.register(doubler('Double_A'));
    registry.register(doubler('Double_Off'), { enabled: false });
    registry.register(doubler('Double_Net', true)); // no network permission: not available
    registry.register(doubler('Double_B'));
    const planner = new ScriptedEngine({ planner: script().planner }, 'planner:test');
    const shared = new ScriptedEngine({ ...script(), planner: undefined }, 'shared:test');
    const r = await runAgent({ conversationId: 'c', query: 'Double 21', tools: toolsFromRegistry(registry), engines: { planner, shared }, config: { maxTurns: 2 } });
    expect(r.finalAnswer).toBe('42');
    const schemaOf = (e: ScriptedEngine, module: string) => e.calls.find((c) => c.module === module)?.options.jsonSchema;
    expect(JSON.parse(schemaOf(planner, 'planner')!).properties.tool_name.enum).toEqual(['Double_A', 'Double_B']);
    expect(JSON.parse(schemaOf(shared, 'executor')!)).toEqual(executorReplySchema(registry.get('Double_A')!.card));
    expect(JSON.parse(schemaOf(shared, 'verifier')!)).toEqual(verifierReplySchema());
    // Free text: the analysis and the answer.
    expect(schemaOf(shared, 'analysis')).toBeUndefined();
    expect(schemaOf(shared, 'generator')).toBeUndefined();

    registry.allowNetwork('Double_Net');
    const again = new ScriptedEngine({ planner: script().planner }, 'planner:test');
    await runAgent({ conversationId: 'c2', query: 'Double 21', tools: toolsFromRegistry(registry), engines: { planner: again, shared }, config: { maxTurns: 1, replyLimits: { subGoal: 30 } } });
    const schema = JSON.parse(schemaOf(again, 'planner')!);
    expect(schema.properties.tool_name.enum).toEqual(['Double_A', 'Double_Net', 'Double_B']);
    expect(schema.properties.sub_goal).toEqual(boundedText(30, true));
  });

  it('passes no schema with constrainReplies off, and none to a planner with no tool to name', async () => {
    const planner = new ScriptedEngine({ planner: script().planner }, 'planner:test');
    const shared = new ScriptedEngine({ ...script(), planner: undefined }, 'shared:test');
    await runAgent({ conversationId: 'c', query: 'Double 21', tools: [doubler('Double_A')], engines: { planner, shared }, config: { maxTurns: 2, constrainReplies: false } });
    expect([...planner.calls, ...shared.calls].map((c) => c.options.jsonSchema)).toEqual(Array(planner.calls.length + shared.calls.length).fill(undefined));
    // JSON mode stays for the modules whose defaults ask for it.
    expect(shared.calls.find((c) => c.module === 'verifier')?.options.json).toBe(true);

    const lone = new ScriptedEngine({ planner: script().planner }, 'planner:test');
    await runAgent({ conversationId: 'c', query: 'Double 21', tools: [], engines: { planner: lone, shared }, config: { maxTurns: 1 } });
    expect(lone.calls[0].options.jsonSchema).toBeUndefined();
    await expect(runAgent({ conversationId: 'c', query: 'q', tools: [], engines: { planner: lone, shared }, config: { constrainReplies: 'yes' as unknown as boolean } })).rejects.toThrow(/constrainReplies must be true or false/);
  });

  it('ReplySchemas makes each schema once', () => {
    const s = new ReplySchemas(['python', 'python', 'wikipedia']);
    expect(s.forPlanner()).toBe(s.forPlanner());
    expect(JSON.parse(s.forPlanner()!).properties.tool_name.enum).toEqual(['python', 'wikipedia']);
    expect(s.forExecutor(PYTHON_CARD)).toBe(s.forExecutor(PYTHON_CARD));
    expect(new ReplySchemas([]).forPlanner()).toBeNull();
    expect(new ReplySchemas([adderTool.card.name]).forVerifier()).toBe(JSON.stringify(verifierReplySchema()));
  });
});

describe("random draws under the planner's grammar", () => {
  it('always parse to an enabled tool and a sub-goal, whole or cut off by the token limit once the sub-goal has begun', async () => {
    // The tiny fixture's byte tokenizer: every character is 1-4 tokens, the worst case for a bounded field.
    const tok = new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });
    const grammar = await SchemaGrammar.for(tok, { vocabSize: 320, stopIds: [BYTE_SPECIALS.im_end] });
    const names = ['python', 'wikipedia', 'base_generator'];
    const schema = JSON.stringify(plannerReplySchema(names, resolveReplyLimits({ subGoal: 24, context: 16, justification: 16 })));
    const rng = new Rng(11);
    let whole = 0;
    for (let run = 0; run < 12; run++) {
      const m = await grammar.matcher(schema);
      const ids: number[] = [];
      // Half the runs favour the bytes that start multi-byte characters: the most tokens per character.
      const heavy = run % 2 === 1;
      while (!m.terminated && ids.length < 400) {
        ids.push(...m.forced(64));
        if (m.terminated) break;
        const mask = await m.allowedMask();
        const allowed = [...Array(320).keys()].filter((id) => (mask[id >> 5] >>> (id & 31)) & 1);
        const lead = allowed.filter((id) => id >= 0xf0 && id <= 0xf4);
        const from = heavy && lead.length && rng.next() < 0.8 ? lead : allowed;
        const id = from[Math.floor(rng.next() * from.length)];
        expect(m.accept(id)).toBe(true);
        ids.push(id);
      }
      expect(m.terminated).toBe(true);
      m.dispose();
      const reply = ids.slice(0, -1);
      const full = parsePlannerOutput(tok.decode(reply), names);
      expect(full.ok, tok.decode(reply)).toBe(true);
      whole++;
      // Every cut after the sub-goal's first character (what a token limit does) still gives a usable plan.
      const start = tok.decode(reply).indexOf('"sub_goal": "') + '"sub_goal": "'.length;
      for (let cut = start + 1; cut <= reply.length; cut++) {
        const text = tok.decode(reply.slice(0, cut));
        if (text.length <= start) continue;
        const p = parsePlannerOutput(text, names);
        expect(p.ok, `cut at ${cut}: ${text}`).toBe(true);
        if (p.ok) expect(names).toContain(p.action.toolName);
      }
    }
    expect(whole).toBe(12);
  }, 60_000);
});
