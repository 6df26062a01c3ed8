import { describe, expect, it } from 'vitest';
import { extractAnswerTag, matchToolName, parsePlannerOutput, parseToolArgs, parseVerdict } from '../src/agent/parse';
import { scoreAnswer } from '../src/agent/rewards';
import { ChunkTokenizer } from './chunk-tokenizer';
import { decodeStats, unionMs } from './e2e';
import { E2E_ITEM, e2eReply, e2eTools } from './e2e-script';

describe('e2e benchmark script', () => {
  it('writes replies the agent loop accepts: a python step, its code, CONTINUE, answers right then wrong', () => {
    const tools = e2eTools();
    const names = tools.map((t) => t.card.name);
    for (const i of [0, 1, 7]) {
      const plan = parsePlannerOutput(e2eReply('planner', i), names);
      expect(plan.ok && plan.method).toBe('json');
      expect(plan.ok && matchToolName(plan.action.toolName, names)).toEqual({ name: 'python', exact: true });
      const args = parseToolArgs(e2eReply('executor', i), tools[0].card);
      expect(args.ok && args.method).toBe('json');
      expect(parseVerdict(e2eReply('verifier', i)).verdict).toBe('CONTINUE');
    }
    // Rollouts' sub-goals differ, as sampled ones would.
    expect(e2eReply('planner', 0)).not.toBe(e2eReply('planner', 1));
    const rewards = [0, 1, 2, 3].map((i) => scoreAnswer({ kind: 'exact', prediction: extractAnswerTag(e2eReply('generator', i))!, reference: E2E_ITEM.answer }));
    expect(rewards).toEqual([1, 0, 1, 0]);
  });
});

describe('chunk tokenizer', () => {
  it('gives the same ids for the same text, within the vocabulary, about 4 characters a token on prose', () => {
    const tok = new ChunkTokenizer(320);
    const text = 'You are the Planner of a tool-using agent. Choose the next step toward answering the query.';
    const ids = tok.encode(text);
    expect(tok.encode(text)).toEqual(ids);
    for (const id of ids) expect(id >= 0 && id < 318 && Number.isInteger(id)).toBe(true);
    expect(text.length / ids.length).toBeGreaterThan(3.5);
    expect(text.length / ids.length).toBeLessThan(6);
    // Digits are one token each, as in Qwen's tokenizer.
    expect(tok.encode('2024')).toHaveLength(4);
  });

  it('lays out chat messages as ChatML: markers at the vocabulary end, a shared head for a shared prefix', () => {
    const tok = new ChunkTokenizer(1000);
    const a = tok.encodeChat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Query: one' }]);
    const b = tok.encodeChat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Query: two' }]);
    expect(a[0]).toBe(998);
    expect(a.filter((id) => id === 999)).toHaveLength(2);
    const head = tok.encodeChat([{ role: 'system', content: 'Be brief.' }]).length - tok.encode('assistant\n').length - 1;
    expect(b.slice(0, head)).toEqual(a.slice(0, head));
    expect(b).not.toEqual(a);
  });
});

describe('e2e step accounting', () => {
  it('unionMs counts overlapping calls once', () => {
    expect(unionMs([])).toBe(0);
    expect(unionMs([{ start: 0, end: 10 }, { start: 5, end: 12 }, { start: 20, end: 25 }, { start: 21, end: 22 }])).toBe(17);
  });

  it('decodeStats gives sequences per decode step over runtime calls', () => {
    const s = decodeStats([
      { adapter: 'a', tags: ['planner', 'planner'], ms: 100, decodeSteps: 10, decodeRows: 20, decodeTokens: 18 },
      { adapter: 'a', tags: ['planner'], ms: 50, decodeSteps: 5, decodeRows: 5, decodeTokens: 5 },
    ]);
    expect(s).toEqual({ runtimeCalls: 2, steps: 15, sequences: 25, sequencesPerStep: 25 / 15, tokens: 23, seconds: 0.15 });
  });
});
