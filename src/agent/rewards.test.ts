// Reward functions against the real answers of the AgentFlow benchmarks in ../shared/benchmarks.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChatEngine, ChatMessage, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import {
  checkGame24,
  choiceLetter,
  choiceMatch,
  describeScore,
  exactMatch,
  finalAnswerSpan,
  game24Expression,
  judgeAnswer,
  normalizeAnswer,
  numericMatch,
  parseNumber,
  plainNumber,
  rewardAnswer,
  rewardKindFor,
  scoreAnswer,
  scoreAnswerDetail,
  type RewardKind,
} from './rewards';

interface Item {
  pid: string | number;
  answer: unknown;
  question?: unknown;
  query?: string;
}
const load = (name: string): Item[] =>
  JSON.parse(readFileSync(new URL(`../../../shared/benchmarks/${name}.json`, import.meta.url), 'utf8')) as Item[];
const refs = (a: unknown): string[] => (Array.isArray(a) ? a.map(String) : [String(a)]);

describe('exact match on the search benchmarks', () => {
  for (const name of ['bamboogle', '2wiki', 'hotpotqa', 'musique']) {
    it(`${name}: each answer and its obvious variants match, other items' answers do not`, () => {
      const items = load(name);
      expect(items.length).toBeGreaterThan(50);
      expect(rewardKindFor(name)).toBe('exact');
      let wrongChecked = 0;
      items.forEach((item, i) => {
        for (const r of refs(item.answer)) {
          expect(exactMatch(r, item.answer)).toBe(true);
          expect(exactMatch(`  ${r.toUpperCase()}. `, item.answer)).toBe(true);
          expect(exactMatch(`The ${r}!`, item.answer)).toBe(true);
          expect(scoreAnswer({ kind: 'exact', prediction: `I found it. <answer>${r}</answer>`, reference: item.answer })).toBe(1);
        }
        const other = items[(i + 1) % items.length];
        const otherRef = refs(other.answer)[0];
        if (!refs(item.answer).some((r) => normalizeAnswer(r) === normalizeAnswer(otherRef))) {
          expect(exactMatch(otherRef, item.answer)).toBe(false);
          wrongChecked++;
        }
        expect(exactMatch('', item.answer)).toBe(false);
      });
      expect(wrongChecked).toBeGreaterThan(items.length / 2);
    });
  }

  it('normalizes like SQuAD', () => {
    expect(normalizeAnswer('The  Battle of Britain, and the Battle of Malta.')).toBe('battle of britain and battle of malta');
    expect(exactMatch('Titan IIIE', ['Titan IIIE'])).toBe(true);
    expect(exactMatch('Titan III', ['Titan IIIE'])).toBe(false);
    expect(exactMatch('yes', 'no')).toBe(false);
  });
});

describe('the final answer a reply states (exact rule)', () => {
  const exact = (prediction: string, reference: unknown) => scoreAnswerDetail({ kind: 'exact', prediction, reference });

  it('reads the answer after a short label or an explicit marker, and numbers by value', () => {
    // The scripted demo's old reply, and the usual ways a model states its answer.
    expect(exact('From the tool: 5', '5')).toEqual({ score: 1, rule: 'answer-span', compared: '5' });
    expect(exact('From the tool: desserts', 'Desserts')).toEqual({ score: 1, rule: 'answer-span', compared: 'desserts' });
    expect(exact('I looked it up. The answer is Paris.', 'paris')).toEqual({ score: 1, rule: 'answer-span', compared: 'Paris' });
    expect(exact('Working...\n**Final answer:** 1,000\nDone.', 1000)).toEqual({ score: 1, rule: 'answer-span', compared: '1,000' });
    expect(exact('The answer is 5. I used Python.', '5').score).toBe(1);
    expect(exact('so \\boxed{42}', '42')).toEqual({ score: 1, rule: 'boxed', compared: '42' });
    expect(exact('5.0', '5')).toEqual({ score: 1, rule: 'same-number' });
    expect(exact('$1,234', '1234')).toEqual({ score: 1, rule: 'same-number' });
    expect(exact('The Eiffel Tower!', 'eiffel tower')).toEqual({ score: 1, rule: 'exact-text' });
    expect(exact('<answer>From the tool: 391</answer>', 391).score).toBe(1);
  });

  it('does not find a right answer inside a wrong one', () => {
    expect(exact('15', '5')).toEqual({ score: 0, rule: 'exact-text' });
    expect(exact('From the tool: 15', '5')).toEqual({ score: 0, rule: 'answer-span', compared: '15' });
    expect(exact('The answer is not 5', '5')).toEqual({ score: 0, rule: 'answer-span', compared: 'not 5' });
    expect(exact('It might be 5 or 6', '5').score).toBe(0);
    expect(exact('I think Paris is wrong; it is Lyon', 'Paris').score).toBe(0);
    // SQuAD normalisation drops a minus sign as punctuation; numbers are compared as numbers.
    expect(exact('-5', '5').score).toBe(0);
    expect(exact('5.1', '5').score).toBe(0);
    expect(exact('From the tool: 5 apples', '5').score).toBe(0);
    // A long "label" is prose, not a label: its tail is no stated answer.
    expect(exact('I asked the calculator and then double checked: 5', '5').score).toBe(0);
  });

  it('finalAnswerSpan and plainNumber', () => {
    expect(finalAnswerSpan('From the tool: 5')).toBe('5');
    expect(finalAnswerSpan('Answer = 3.5.')).toBe('3.5');
    expect(finalAnswerSpan('The capital is Washington, D.C. and the answer is Washington, D.C.')).toBe('Washington, D.C');
    expect(finalAnswerSpan('no marker here')).toBeNull();
    expect(finalAnswerSpan('line one: x\nline two')).toBeNull();
    expect(plainNumber('5.')).toBe(5);
    expect(plainNumber('−2.5')).toBe(-2.5);
    expect(plainNumber('x = 5')).toBeNull();
    expect(plainNumber('27 miles')).toBeNull();
  });

  it('says which rule scored a numeric, choice or Game of 24 reply', () => {
    expect(scoreAnswerDetail({ kind: 'numeric', prediction: '42', reference: '42' })).toEqual({ score: 1, rule: 'whole-number' });
    expect(scoreAnswerDetail({ kind: 'numeric', prediction: 'The answer is 12. Check: 12 = 3 × 4', reference: 12 })).toEqual({ score: 1, rule: 'answer-span', compared: '12' });
    expect(scoreAnswerDetail({ kind: 'numeric', prediction: 'we get 7 then 9', reference: 9 })).toEqual({ score: 1, rule: 'last-number', compared: '9' });
    expect(scoreAnswerDetail({ kind: 'numeric', prediction: 'no idea', reference: 9 })).toEqual({ score: 0, rule: 'unreadable' });
    expect(scoreAnswerDetail({ kind: 'choice', prediction: '(B)', reference: 'B' })).toEqual({ score: 1, rule: 'choice-letter', compared: 'B' });
    expect(scoreAnswerDetail({ kind: 'gameof24', prediction: '(1+1+1)×8', reference: '', numbers: [1, 1, 1, 8] })).toMatchObject({ score: 1, rule: 'gameof24' });
    expect(scoreAnswerDetail({ kind: 'exact', prediction: { a: 1 } as unknown as string, reference: 'x' })).toEqual({ score: 0, rule: 'unreadable' });
    expect(describeScore({ rule: 'answer-span', compared: '5' })).toBe('stated answer “5”');
    expect(describeScore({ rule: 'exact-text' })).toBe('exact text');
  });
});

describe('numeric match on AIME24 and AMC23', () => {
  for (const name of ['aime24', 'amc23']) {
    it(`${name}: every answer in the usual written forms matches; off-by-one does not`, () => {
      const items = load(name);
      expect(rewardKindFor(name)).toBe('numeric');
      for (const item of items) {
        const v = Number(item.answer);
        expect(Number.isFinite(v)).toBe(true);
        const s = String(item.answer);
        const forms = [s, `\\boxed{${s}}`, `The answer is $${s}$.`, `so we get ${s} units`, `${s}.0`, `x = ${s}`, `<answer>${s}</answer>`];
        if (Math.abs(v) >= 1000) forms.push(v.toLocaleString('en-US'));
        for (const f of forms) expect(numericMatch(f, item.answer), f).toBe(true);
        expect(numericMatch(String(v + 1), item.answer)).toBe(false);
        expect(numericMatch(`\\boxed{${v * 10}}`, item.answer)).toBe(false);
        expect(scoreAnswer({ kind: 'numeric', prediction: `Work... <answer>\\boxed{${s}}</answer>`, reference: item.answer })).toBe(1);
      }
    });
  }

  it('reads fractions, LaTeX, commas, percent, degrees and units', () => {
    expect(parseNumber('\\frac{3}{4}')).toBe(0.75);
    expect(parseNumber('\\dfrac{-6}{8}')).toBe(-0.75);
    expect(parseNumber('\\tfrac12')).toBe(0.5);
    expect(parseNumber('3/4')).toBe(0.75);
    expect(parseNumber('2 1/2')).toBe(2.5);
    expect(parseNumber('$1,234,567$')).toBe(1234567);
    expect(parseNumber('45^\\circ')).toBe(45);
    expect(parseNumber('50\\%')).toBe(50);
    expect(parseNumber('27 miles')).toBe(27);
    expect(parseNumber('\\boxed{\\frac{1}{3}}')).toBeCloseTo(1 / 3, 15);
    expect(parseNumber('1/0')).toBeNull();
    expect(parseNumber('x+1')).toBeNull();
    expect(numericMatch('\\frac{1}{3}', '0.333333333')).toBe(true);
    expect(numericMatch('0.3333', '\\frac{1}{3}')).toBe(false);
    expect(numericMatch('no number here', '3')).toBe(false);
  });
});

describe('multiple choice', () => {
  const options = ['Mitochondria', 'Nucleus', 'Ribosome', 'Golgi apparatus'];
  it('matches the letter in its usual forms or the option text', () => {
    for (const p of ['B', '(B)', 'B.', 'B) Nucleus', 'The answer is B', 'Answer: (B)']) {
      expect(choiceLetter(p), p).toBe('B');
      expect(choiceMatch(p, 'B', options), p).toBe(true);
      expect(choiceMatch(p, 'Nucleus', options), p).toBe(true);
      expect(choiceMatch(p, 'C', options), p).toBe(false);
    }
    expect(choiceMatch('the nucleus', 'B', options)).toBe(true);
    expect(choiceMatch('Ribosome', 'B', options)).toBe(false);
    expect(choiceLetter('I am not sure')).toBeNull();
    expect(rewardKindFor('gpqa')).toBe('choice');
  });
});

// An independent solver: tries every order of the numbers, operator choice and bracketing.
function solve24(nums: number[]): string | null {
  type E = { v: number; s: string };
  const rec = (items: E[]): string | null => {
    if (items.length === 1) return Math.abs(items[0].v - 24) < 1e-9 ? items[0].s : null;
    for (let i = 0; i < items.length; i++) {
      for (let j = 0; j < items.length; j++) {
        if (i === j) continue;
        const rest = items.filter((_, k) => k !== i && k !== j);
        const a = items[i];
        const b = items[j];
        const cands: E[] = [
          { v: a.v + b.v, s: `(${a.s}+${b.s})` },
          { v: a.v - b.v, s: `(${a.s}-${b.s})` },
          { v: a.v * b.v, s: `(${a.s}×${b.s})` },
        ];
        if (b.v !== 0) cands.push({ v: a.v / b.v, s: `(${a.s}÷${b.s})` });
        for (const c of cands) {
          const r = rec([...rest, c]);
          if (r) return r;
        }
      }
    }
    return null;
  };
  return rec(nums.map((n) => ({ v: n, s: String(n) })));
}

describe('Game of 24', () => {
  const items = load('gameof24') as Array<Item & { question: number[]; answer: string[] }>;

  it('accepts the dataset answers and solver expressions for every real puzzle, and rejects tampered ones', () => {
    expect(items.length).toBe(300);
    expect(rewardKindFor('gameof24')).toBe('gameof24');
    let solved = 0;
    for (const item of items) {
      const nums = item.question;
      for (const a of item.answer) expect(checkGame24(a, nums), `${item.pid}: ${a}`).toMatchObject({ ok: true });
      const expr = solve24(nums);
      if (!expr) continue;
      solved++;
      const check = checkGame24(expr, nums);
      expect(check.ok, `${nums} ${expr}`).toBe(true);
      expect(scoreAnswer({ kind: 'gameof24', prediction: `<answer>${expr} = 24</answer>`, reference: item.answer, numbers: nums })).toBe(1);
      // The same expression for other numbers, one number changed, or one left out, is wrong.
      const changed = nums.map((n, i) => (i === 0 ? n + 1 : n));
      expect(checkGame24(expr, changed).ok).toBe(false);
      expect(checkGame24(`${expr}×1`, nums).ok).toBe(false);
    }
    expect(solved).toBe(items.length);
  });

  it('rejects non-24 values, reuse, division by zero, unary minus and anything that is not arithmetic', () => {
    expect(checkGame24('(1+2+3)×4', [1, 2, 3, 4])).toEqual({ ok: true, value: 24 });
    expect(checkGame24('8/(3-8/3)', [3, 3, 8, 8])).toMatchObject({ ok: true }); // needs exact-ish division
    expect(checkGame24('1+2+3+4', [1, 2, 3, 4])).toEqual({ ok: false, reason: 'evaluates to 10, not 24' });
    expect(checkGame24('4×6', [4, 6, 6, 1])).toEqual({ ok: false, reason: 'uses 4, 6 but the numbers are 1, 4, 6, 6' });
    expect(checkGame24('4/(1-1)×6×6', [4, 1, 1, 6])).toMatchObject({ ok: false, reason: 'division by zero' });
    expect(checkGame24('-1+25', [1, 25])).toMatchObject({ ok: false, reason: 'unary minus is not allowed' });
    expect(checkGame24('alert(24)', [24])).toMatchObject({ ok: false });
    expect(checkGame24('(1+2', [1, 2])).toMatchObject({ ok: false, reason: 'unbalanced parentheses' });
    expect(game24Expression('Let me think.\nSo (1+2+3)×4 = 24 works.')).toBe('(1+2+3)×4');
  });
});

class OneReplyEngine implements ChatEngine {
  readonly id = 'test:one-reply';
  seen: ChatMessage[][] = [];
  constructor(private reply: string) {}
  stream(messages: ChatMessage[]): ChatStream {
    this.seen.push(messages);
    return chatStream(async () => ({ text: this.reply, promptTokens: [], tokens: [], logprobs: [], adapterId: null, finishReason: 'stop', timings: { prefillMs: 0, decodeMs: 0 } }));
  }
}

describe('judge', () => {
  it('asks the engine with the question, reference and response, and parses its yes/no', async () => {
    const yes = new OneReplyEngine('Yes, they match.');
    expect(await judgeAnswer(yes, 'Who?', 'J. Madison', ['james madison'])).toBe(true);
    expect(yes.seen[0][1].content).toContain('Reference answer: james madison');
    expect(yes.seen[0][1].content).toContain('Response: J. Madison');
    expect(await judgeAnswer(new OneReplyEngine('{"answer": "no"}'), 'q', 'a', 'b')).toBe(false);
    expect(await judgeAnswer(new OneReplyEngine('perhaps'), 'q', 'a', 'b')).toBeNull();
  });

  it('rewardAnswer asks the judge only about a rule miss, and a failing or unsure judge leaves the 0', async () => {
    const judge = new OneReplyEngine('yes');
    const input = { kind: 'exact' as const, prediction: 'James Madison', reference: ['james madison'] };
    expect(await rewardAnswer(input, { engine: judge, question: 'Who?' })).toBe(1);
    expect(judge.seen.length).toBe(0);
    const miss = { ...input, prediction: 'J. Madison' };
    expect(await rewardAnswer(miss)).toBe(0);
    expect(await rewardAnswer(miss, { engine: judge, question: 'Who?' })).toBe(1);
    expect(judge.seen.length).toBe(1);
    expect(await rewardAnswer(miss, { engine: new OneReplyEngine('perhaps'), question: 'Who?' })).toBe(0);
    const failing: ChatEngine = { id: 'test:fails', stream: () => chatStream(async () => { throw new Error('engine lost'); }) };
    expect(await rewardAnswer(miss, { engine: failing, question: 'Who?' })).toBe(0);
  });
});

describe('hostile answers and references', () => {
  const throwing = () => {
    throw new Error('touched');
  };
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const getterArray: unknown[] = [];
  Object.defineProperty(getterArray, 0, { get: throwing, enumerable: true });
  const hostile: Array<[string, unknown]> = [
    ['toString string', { toString: 'boom' }],
    ['toString throws', { toString: throwing, valueOf: throwing }],
    ['toPrimitive throws', { [Symbol.toPrimitive]: throwing }],
    ['plain object', { a: 1 }],
    ['null prototype', Object.create(null) as unknown],
    ['symbol', Symbol('s')],
    ['bigint', 24n],
    ['null', null],
    ['undefined', undefined],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['function', throwing],
    ['huge string', `${'9 '.repeat(40_000)}<answer>${'x'.repeat(100_000)}`],
    ['nested arrays', [[['a']], [1, [2]]]],
    ['array of hostile', [{ toString: 'boom' }, Symbol('t'), NaN]],
    ['array with a throwing getter', getterArray],
    ['empty array', []],
    ['revoked proxy', revoked.proxy],
    ['boolean', true],
  ];
  const plain: Array<[string, unknown]> = [
    ['string', 'Paris'],
    ['number', 24],
    ['list', ['B', 'Paris']],
  ];
  const kinds: RewardKind[] = ['exact', 'numeric', 'choice', 'gameof24'];

  it('scoreAnswer returns 0 or 1 for every rule and never throws, whatever the prediction, reference, numbers or options', () => {
    let calls = 0;
    for (const kind of kinds) {
      for (const [pn, prediction] of [...hostile, ...plain]) {
        for (const [rn, reference] of [...hostile, ...plain]) {
          const extras = [{}, { numbers: reference as number[], options: reference as string[] }];
          for (const extra of extras) {
            let score: unknown;
            expect(() => {
              score = scoreAnswer({ kind, prediction: prediction as string, reference, ...extra });
            }, `${kind}: prediction ${pn}, reference ${rn}`).not.toThrow();
            expect([0, 1], `${kind}: prediction ${pn}, reference ${rn}`).toContain(score);
            calls++;
          }
        }
      }
    }
    expect(calls).toBe(kinds.length * 23 * 23 * 2);
  });

  it('an object, NaN or infinity is no one\'s answer: its String() form does not score as right', () => {
    for (const kind of ['exact', 'choice'] as const) {
      expect(scoreAnswer({ kind, prediction: 'object Object', reference: { a: 1 } }), kind).toBe(0);
      expect(scoreAnswer({ kind, prediction: 'Infinity', reference: Infinity }), kind).toBe(0);
      expect(scoreAnswer({ kind, prediction: 'NaN', reference: [NaN] }), kind).toBe(0);
      expect(scoreAnswer({ kind, prediction: 'a', reference: [['a']] }), kind).toBe(0);
      expect(scoreAnswer({ kind, prediction: '[object Object]', reference: { a: 1 } as unknown as string }), kind).toBe(0);
    }
    expect(scoreAnswer({ kind: 'numeric', prediction: 'Infinity', reference: Infinity })).toBe(0);
    expect(scoreAnswer({ kind: 'exact', prediction: { a: 1 } as unknown as string, reference: '[object Object]' })).toBe(0);
    // Finite numbers, bigints and lists of strings still score as before.
    expect(scoreAnswer({ kind: 'exact', prediction: '24', reference: 24n })).toBe(1);
    expect(scoreAnswer({ kind: 'numeric', prediction: '\\boxed{1/2}', reference: [0.5] })).toBe(1);
    expect(scoreAnswer({ kind: 'choice', prediction: 'C', reference: ['B', 'C'] })).toBe(1);
    expect(scoreAnswer({ kind: 'choice', prediction: 'B', reference: ['B'], options: ['x', 'y'] })).toBe(1);
    // Game of 24 without usable numbers is wrong, not an exception mid-run.
    expect(scoreAnswer({ kind: 'gameof24', prediction: '(1+1+1)×8', reference: '' })).toBe(0);
    expect(scoreAnswer({ kind: 'gameof24', prediction: '(1+1+1)×8', reference: '', numbers: [1, 1, 1, 8] })).toBe(1);
  });

  it('judgeAnswer never rejects on hostile values and does not ask without a usable reference', async () => {
    const engine = new OneReplyEngine('yes');
    for (const [qn, question] of [...hostile, ['string', 'Who?'] as [string, unknown]]) {
      for (const [pn, prediction] of [...hostile, ...plain]) {
        for (const [rn, reference] of [...hostile, ...plain]) {
          const verdict = await judgeAnswer(engine, question as string, prediction as string, reference);
          expect([true, false, null], `question ${qn}, prediction ${pn}, reference ${rn}`).toContain(verdict);
        }
      }
    }
    const asked = engine.seen.length;
    expect(await judgeAnswer(engine, 'q', 'object Object', { a: 1 })).toBeNull();
    expect(await judgeAnswer(engine, 'q', 'x', [NaN, Symbol('s')])).toBeNull();
    expect(engine.seen.length).toBe(asked);
  });
});
