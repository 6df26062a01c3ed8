// Rewards for finished runs: a single verifiable outcome per run that Flow-GRPO broadcasts to every planner
// turn. Each checker is strict about what counts as right and tolerant about formatting.
import type { ChatEngine } from '../engine/chat-engine';
import { extractAnswerTag, parseYesNo } from './parse';

// -------------------------------------------------------------------------------------- exact match

/** SQuAD normalization: lower case, no punctuation, no articles, single spaces. */
export function normalizeAnswer(s: string): string {
  return String(s)
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\p{P}\p{S}]/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The text of an answer value: a string, or a finite number (or bigint) written out. Null for anything else,
 * since String() on an object runs its toString (which can throw, or turn {"a":1} into "[object Object]",
 * an answer a model could hit), and Infinity or NaN are no one's answer.
 */
export function answerText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (typeof value === 'bigint') return value.toString();
  return null;
}

/** The accepted answers: one answer or a flat list of them; values that are not answers are dropped. */
function refList(reference: unknown): string[] {
  const out: string[] = [];
  try {
    const list: unknown[] = Array.isArray(reference) ? reference : [reference];
    for (const r of list) {
      const t = answerText(r);
      if (t !== null) out.push(t);
    }
  } catch {
    // A revoked Proxy or a throwing index getter: nothing in it can be read as an answer.
    return [];
  }
  return out;
}

/** True when the prediction equals one of the references after normalization. */
export function exactMatch(prediction: string, reference: unknown): boolean {
  const p = normalizeAnswer(prediction);
  return p.length > 0 && refList(reference).some((r) => normalizeAnswer(r) === p);
}

/**
 * A text that is nothing but a number ("5", "5.0", "-1,000", "$12", "7."), as that number; null otherwise.
 * Stricter than parseNumber, which also reads "x = 5" or "27 miles": the exact rule must not turn prose into
 * a number, only see that "5.0" and "5" say the same.
 */
export function plainNumber(text: string): number | null {
  const s = String(text)
    .trim()
    .replace(/^\$|\.$/g, '')
    .replace(/[−–]/g, '-')
    .replace(/(\d),(?=\d{3}(?:\D|$))/g, '$1');
  if (s.length > 60 || !new RegExp(`^(?:${NUM})$`).test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

/**
 * How a candidate answer equals a reference: the same number when both are plain numbers (so "5.0" is "5"
 * but "-5" is not, which SQuAD normalisation, dropping the sign as punctuation, would call equal), else the
 * same text after SQuAD normalisation. Null when they differ.
 */
function sameAnswer(candidate: string, reference: string): 'exact-text' | 'same-number' | null {
  const a = plainNumber(candidate);
  const b = plainNumber(reference);
  if (a !== null && b !== null) return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)) ? 'same-number' : null;
  const p = normalizeAnswer(candidate);
  return p.length > 0 && p === normalizeAnswer(reference) ? 'exact-text' : null;
}

/**
 * The final answer a sentence states, as AgentFlow's benchmarks read one: the text after the last explicit
 * marker ("the answer is X", "Final answer: X", "Answer = X") up to the end of its line or sentence, or the
 * value after a short leading label on a one-line reply ("From the tool: 5"). Null when the reply has neither:
 * the exact rule then compares the whole reply, never a number picked out of prose, so "15" never holds "5"
 * and "The answer is not 5" reads as "not 5".
 */
export function finalAnswerSpan(text: string): string | null {
  const t = String(text).slice(-4000).replace(/[*_`]+/g, '');
  const markers = [...t.matchAll(/\b(?:final\s+)?answer\s*(?:is|was|would be|will be|:|=)\s*/gi)];
  if (markers.length) {
    const m = markers[markers.length - 1];
    const rest = t.slice(m.index + m[0].length).split('\n')[0];
    // A sentence after the answer ("5. I used Python.") is not part of it; "5.0" or "D.C." has no space after its dot.
    const span = rest.split(/[.!?]\s+(?=[A-Z])/)[0].trim().replace(/[.!]+$/, '').trim();
    return span || null;
  }
  const label = /^\s*([A-Za-z][A-Za-z' ]{0,40}):[ \t]*([^\n]+?)\s*$/.exec(t);
  if (label && label[1].trim().split(/\s+/).length <= 4) return label[2].replace(/[.!]+$/, '').trim() || null;
  return null;
}

// -------------------------------------------------------------------------------------- numbers

/** Content of the last \boxed{...} (braces balanced), or null. */
export function lastBoxed(s: string): string | null {
  const i = Math.max(s.lastIndexOf('\\boxed{'), s.lastIndexOf('\\fbox{'));
  if (i < 0) return null;
  const start = s.indexOf('{', i) + 1;
  let depth = 1;
  for (let j = start; j < s.length; j++) {
    if (s[j] === '{') depth++;
    else if (s[j] === '}' && --depth === 0) return s.slice(start, j);
  }
  return null;
}

const NUM = String.raw`[-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[-−]?\.\d+`;

/**
 * The number a piece of math text states: \boxed{}, \frac{a}{b}, a/b, thousands commas, $, %, degrees and
 * trailing unit words removed. Null when it is not a single number.
 */
export function parseNumber(text: string): number | null {
  let s = String(text).trim();
  if (s.length > 200) return null;
  s = lastBoxed(s) ?? s;
  s = s
    .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, '($1)/($2)')
    .replace(/\\[dt]?frac\s*(\d)\s*(\d)/g, '$1/$2')
    .replace(/\^\s*\{?\\circ\}?|°|\\%|%|\\\$|\$|\\[,!;: ]|\\text\{[^}]*\}|\\mathrm\{[^}]*\}|\\left|\\right/g, ' ')
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .replace(/[−–]/g, '-')
    .trim()
    .replace(/[.\s]+$/, '')
    .replace(/\s+[A-Za-z][A-Za-z ]*$/, '') // trailing unit words: "27 miles"
    .replace(/^[A-Za-z][A-Za-z ]*[:=]\s*/, '') // "x = 5", "Answer: 5"
    .trim();
  const frac = new RegExp(`^\\(?\\s*(${NUM})\\s*\\)?\\s*/\\s*\\(?\\s*(${NUM})\\s*\\)?$`).exec(s);
  if (frac) {
    const d = Number(frac[2].replace('−', '-'));
    return d === 0 ? null : Number(frac[1].replace('−', '-')) / d;
  }
  const mixed = /^(-?\d+)\s+(\d+)\s*\/\s*(\d+)$/.exec(s);
  if (mixed && Number(mixed[3]) !== 0) {
    const w = Number(mixed[1]);
    const f = Number(mixed[2]) / Number(mixed[3]);
    return w < 0 ? w - f : w + f;
  }
  if (new RegExp(`^(?:${NUM})$`).test(s)) return Number(s.replace('−', '-'));
  return null;
}

/** The number a free-form reply ends on: the boxed value, the whole reply, or its last number. */
export function finalNumber(prediction: string): number | null {
  const p = String(prediction);
  const boxed = lastBoxed(p);
  if (boxed !== null) return parseNumber(boxed);
  const whole = parseNumber(p);
  if (whole !== null) return whole;
  const cleaned = p.replace(/\\[dt]?frac\s*\{(\d+)\}\s*\{(\d+)\}/g, '$1/$2').replace(/(\d),(?=\d{3}\b)/g, '$1');
  const all = [...cleaned.matchAll(new RegExp(`(?:${NUM})(?:\\s*/\\s*\\d+)?`, 'g'))];
  return all.length ? parseNumber(all[all.length - 1][0]) : null;
}

/**
 * The number a reply gives as its answer and where it was read: a \boxed{} value, the whole reply, the number
 * an explicit "the answer is …" states, or else the reply's last number.
 */
export function finalNumberDetail(prediction: string): { value: number; rule: 'boxed' | 'whole-number' | 'answer-span' | 'last-number' } | null {
  const p = String(prediction);
  const boxed = lastBoxed(p);
  if (boxed !== null) {
    const v = parseNumber(boxed);
    return v === null ? null : { value: v, rule: 'boxed' };
  }
  const whole = parseNumber(p);
  if (whole !== null) return { value: whole, rule: 'whole-number' };
  // "The answer is 12. Check: 12 = 3 × 4" ends on 4; its stated answer is 12.
  const span = finalAnswerSpan(p);
  const stated = span === null ? null : parseNumber(span);
  if (stated !== null) return { value: stated, rule: 'answer-span' };
  const last = finalNumber(p);
  return last === null ? null : { value: last, rule: 'last-number' };
}

/** True when both state the same number (relative tolerance for decimals). */
export function numericMatch(prediction: string, reference: unknown, tolerance = 1e-6): boolean {
  const p = finalNumberDetail(prediction)?.value ?? null;
  if (p === null) return false;
  return refList(reference).some((r) => {
    const v = parseNumber(r);
    return v !== null && Math.abs(p - v) <= tolerance * Math.max(1, Math.abs(v));
  });
}

// -------------------------------------------------------------------------------------- multiple choice

/** The option letter a reply picks ("B", "(B)", "B.", "Answer: B", "B) text"), or null. */
export function choiceLetter(prediction: string, letters = 'ABCDEFGHIJ'): string | null {
  const p = String(prediction).trim();
  const set = `[${letters}]`;
  const patterns = [
    new RegExp(`^\\(?(${set})\\)?[.:)]?$`),
    new RegExp(`^\\(?(${set})[).:]\\s`),
    new RegExp(`answer\\s*(?:is|:)?\\s*\\(?(${set})\\b\\)?`, 'i'),
    new RegExp(`\\((${set})\\)`),
  ];
  for (const re of patterns) {
    const m = re.exec(p);
    if (m) return m[1].toUpperCase();
  }
  return null;
}

/**
 * Multiple choice: right when the reply picks the reference letter, or states the reference option's text.
 * `reference` is a letter ("C") or the correct option's text; `options` are the choices in letter order.
 */
export function choiceMatch(prediction: string, reference: string, options: string[] = []): boolean {
  if (typeof reference !== 'string') return false;
  const letters = 'ABCDEFGHIJ'.slice(0, Math.max(options.length, 4));
  let refLetter = /^\(?[A-J]\)?$/.test(reference.trim()) ? reference.trim().replace(/[()]/g, '') : null;
  if (!refLetter) {
    const idx = options.findIndex((o) => normalizeAnswer(o) === normalizeAnswer(reference));
    if (idx >= 0) refLetter = letters[idx];
  }
  const picked = choiceLetter(prediction, letters);
  if (picked && refLetter) return picked === refLetter;
  const refText = refLetter && options.length ? options[letters.indexOf(refLetter)] : reference;
  const body = String(prediction).replace(/^\(?[A-J]\)?[.:)]\s*/, '');
  return refText !== undefined && exactMatch(body, refText);
}

// -------------------------------------------------------------------------------------- Game of 24

export type Game24Check = { ok: true; value: number } | { ok: false; reason: string };

/**
 * Checks an arithmetic expression for the Game of 24: only + - × / and parentheses, each given number used
 * exactly once, value 24 within 1e-6. Parsed by recursive descent; nothing is evaluated as code.
 */
export function checkGame24(expression: string, numbers: number[], target = 24): Game24Check {
  const src = String(expression)
    .replace(/\\times|×|·|\*|x(?=\s*[\d(])/g, '*')
    .replace(/\\div|÷|:/g, '/')
    .replace(/[−–]/g, '-')
    .replace(/\\left|\\right|\$/g, '')
    .replace(/[[{]/g, '(')
    .replace(/[\]}]/g, ')')
    .replace(/=\s*24\s*$/, '')
    .trim();
  if (!src) return { ok: false, reason: 'empty expression' };
  if (src.length > 200) return { ok: false, reason: 'expression too long' };
  const tokens = src.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let pos = 0;
  const used: number[] = [];
  const fail = (reason: string): never => {
    throw new Game24Error(reason);
  };
  const expr = (): number => {
    let v = term();
    while (tokens[pos] === '+' || tokens[pos] === '-') {
      const op = tokens[pos++];
      const r = term();
      v = op === '+' ? v + r : v - r;
    }
    return v;
  };
  const term = (): number => {
    let v = factor();
    while (tokens[pos] === '*' || tokens[pos] === '/') {
      const op = tokens[pos++];
      const r = factor();
      if (op === '/' && r === 0) fail('division by zero');
      v = op === '*' ? v * r : v / r;
    }
    return v;
  };
  const factor = (): number => {
    const t = tokens[pos++];
    if (t === undefined) return fail('expression ends early');
    if (t === '(') {
      const v = expr();
      if (tokens[pos++] !== ')') fail('unbalanced parentheses');
      return v;
    }
    if (t === '-') return fail('unary minus is not allowed');
    if (/^\d/.test(t)) {
      used.push(Number(t));
      return Number(t);
    }
    return fail(`unexpected '${t}'`);
  };
  let value: number;
  try {
    value = expr();
    if (pos < tokens.length) fail(`unexpected '${tokens[pos]}'`);
  } catch (e) {
    if (e instanceof Game24Error) return { ok: false, reason: e.message };
    throw e;
  }
  const a = [...used].sort((x, y) => x - y);
  const b = [...numbers].sort((x, y) => x - y);
  if (a.length !== b.length || a.some((x, i) => x !== b[i])) {
    return { ok: false, reason: `uses ${a.join(', ')} but the numbers are ${b.join(', ')}` };
  }
  if (!(Math.abs(value - target) <= 1e-6)) return { ok: false, reason: `evaluates to ${value}, not ${target}` };
  return { ok: true, value };
}

class Game24Error extends Error {}

/** The expression in a reply: the answer tag, the last line with an operator, or the whole reply. */
export function game24Expression(prediction: string): string {
  const tagged = extractAnswerTag(prediction) ?? lastBoxed(prediction) ?? String(prediction);
  const lines = tagged.split('\n').map((l) => l.trim()).filter((l) => /\d\s*[-+*/×÷]\s*[\d(]/.test(l));
  const line = (lines.length ? lines[lines.length - 1] : tagged.trim()).slice(0, 2000);
  // "... : (1+2+3)×4 = 24" -> the expression part only.
  const m = /[\d(][\d\s()+\-*/×÷.\\timesdiv]*[\d)]/.exec(line.replace(/=\s*24\b.*$/, ''));
  return m ? m[0] : line;
}

// -------------------------------------------------------------------------------------- judge

/**
 * Asks an engine whether a reply means the same as the reference; null when its answer is unreadable.
 */
export async function judgeAnswer(
  engine: ChatEngine,
  question: string,
  prediction: string,
  reference: unknown,
  signal?: AbortSignal,
): Promise<boolean | null> {
  const refs = refList(reference).join(' | ');
  // With no usable reference the judge would be guessing; a hostile question or response is no answer.
  if (!refs.trim() || typeof question !== 'string' || typeof prediction !== 'string') return null;
  const res = await engine.stream(
    [
      {
        role: 'system',
        content: 'You grade answers. Reply with one word: yes if the response gives the same answer as the reference, no otherwise.',
      },
      {
        role: 'user',
        content: `Question: ${question.slice(0, 2000)}\nReference answer: ${refs.slice(0, 500)}\nResponse: ${prediction.slice(0, 2000)}\nSame answer (yes/no)?`,
      },
    ],
    { maxNewTokens: 8, temperature: 0, signal },
  ).result;
  return parseYesNo(res.text);
}

// -------------------------------------------------------------------------------------- dispatch

export type RewardKind = 'exact' | 'numeric' | 'choice' | 'gameof24';

/** The reward kind each AgentFlow benchmark is scored with. */
export function rewardKindFor(benchmark: string): RewardKind {
  const b = benchmark.toLowerCase().replace(/\.(json|jsonl)$/, '');
  if (/aime|amc|math|gsm/.test(b)) return 'numeric';
  if (/24/.test(b)) return 'gameof24';
  if (/gpqa|medqa|mmlu|choice/.test(b)) return 'choice';
  return 'exact';
}

export interface RewardInput {
  kind: RewardKind;
  /** The final answer text (for benchmarks, what the <answer> tag held if there was one). */
  prediction: string;
  reference: unknown;
  /** Game of 24: the four numbers. Multiple choice: options in letter order. */
  numbers?: number[];
  options?: string[];
}

/**
 * Which rule decided an item's score, and on what part of the reply:
 * - exact-text: the reply (or its compared part) equals a reference after SQuAD normalisation;
 * - same-number: both are plain numbers and equal ("5.0" and "5");
 * - boxed: the last \boxed{} value; answer-span: the text after "the answer is" or a short label
 *   ("From the tool: 5"); whole-number: the whole reply read as a number; last-number: the reply's last number;
 * - choice-letter / choice-text: the option letter picked, or the option's text;
 * - gameof24: the expression checked; judge: a model judged it the same answer; unreadable: no rule could read it.
 */
export type ScoreRule =
  | 'exact-text'
  | 'same-number'
  | 'boxed'
  | 'answer-span'
  | 'whole-number'
  | 'last-number'
  | 'choice-letter'
  | 'choice-text'
  | 'gameof24'
  | 'judge'
  | 'unreadable';

export interface ScoreDetail {
  score: 0 | 1;
  rule: ScoreRule;
  /** The part of the reply that was compared (the extracted answer, number or expression), when not all of it. */
  compared?: string;
}

/** A score's rule in words, for a results table: "exact text", "answer span “5”", "last number 12". */
export function describeScore(d: Pick<ScoreDetail, 'rule' | 'compared'>): string {
  const words: Record<ScoreRule, string> = {
    'exact-text': 'exact text',
    'same-number': 'same number',
    boxed: 'boxed answer',
    'answer-span': 'stated answer',
    'whole-number': 'whole reply as a number',
    'last-number': 'last number',
    'choice-letter': 'option letter',
    'choice-text': 'option text',
    gameof24: 'Game of 24 check',
    judge: 'judged by a model',
    unreadable: 'no readable answer',
  };
  const w = words[d.rule] ?? String(d.rule);
  if (typeof d.compared !== 'string' || !d.compared) return w;
  const c = d.compared.length > 40 ? `${d.compared.slice(0, 40)}…` : d.compared;
  return `${w} “${c}”`;
}

/**
 * 1 when the prediction is right, else 0. Never throws: a training run scores every rollout with it, and an
 * answer no rule can read (an object, NaN, a list of lists) is wrong, not a reason to stop the run.
 */
export function scoreAnswer(input: RewardInput): number {
  return scoreAnswerDetail(input).score;
}

/**
 * A finished run's reward: the rule's 0/1, and on a miss the `judge` engine's verdict when one is given
 * (answers phrased differently from the reference); a judge that fails or replies unreadably leaves the 0.
 * Training rollouts, held-out evaluation and chat sessions all score with it.
 */
export async function rewardAnswer(input: RewardInput, judge?: { engine: ChatEngine; question: string; signal?: AbortSignal }): Promise<number> {
  const reward = scoreAnswer(input);
  if (reward !== 0 || !judge) return reward;
  const verdict = await judgeAnswer(judge.engine, judge.question, input.prediction, input.reference, judge.signal).catch(() => null);
  return verdict === true ? 1 : 0;
}

/** scoreAnswer with the rule that decided it (never throws either). */
export function scoreAnswerDetail(input: RewardInput): ScoreDetail {
  try {
    return scoreOrThrow(input);
  } catch {
    // Only exotic values get here (a revoked Proxy throws even from Array.isArray); the cases above handle
    // every value JSON can hold.
    return { score: 0, rule: 'unreadable' };
  }
}

function scoreOrThrow(input: RewardInput): ScoreDetail {
  const given = answerText(input.prediction);
  if (given === null) return { score: 0, rule: 'unreadable' };
  const pred = extractAnswerTag(given) ?? given;
  switch (input.kind) {
    case 'exact':
      return scoreExact(pred, refList(input.reference));
    case 'numeric': {
      const n = finalNumberDetail(pred);
      if (!n) return { score: 0, rule: 'unreadable' };
      const compared = n.rule === 'whole-number' ? undefined : String(n.value);
      return { score: numericMatch(pred, input.reference) ? 1 : 0, rule: n.rule, ...(compared !== undefined ? { compared } : {}) };
    }
    case 'choice': {
      // Options with a non-string in them cannot be matched by letter position: use none.
      const options = Array.isArray(input.options) && input.options.every((o) => typeof o === 'string') ? input.options : [];
      const letters = 'ABCDEFGHIJ'.slice(0, Math.max(options.length, 4));
      const picked = choiceLetter(pred, letters);
      const ok = refList(input.reference).some((ref) => choiceMatch(pred, ref, options));
      return picked ? { score: ok ? 1 : 0, rule: 'choice-letter', compared: picked } : { score: ok ? 1 : 0, rule: 'choice-text' };
    }
    case 'gameof24': {
      // The import reports a Game of 24 item without its numbers; a caller that still passes none scores 0.
      const numbers = input.numbers;
      if (!Array.isArray(numbers) || !numbers.length || !numbers.every((n) => Number.isFinite(n))) return { score: 0, rule: 'unreadable' };
      const expr = game24Expression(pred);
      return { score: checkGame24(expr, numbers).ok ? 1 : 0, rule: 'gameof24', compared: expr };
    }
    default:
      return { score: 0, rule: 'unreadable' };
  }
}

/**
 * The exact rule: the whole reply, else its \boxed{} value, else its stated answer (finalAnswerSpan) equals a
 * reference. A wrong reply reports the part it was judged on: the stated answer when it has one.
 */
function scoreExact(pred: string, refs: string[]): ScoreDetail {
  const boxed = lastBoxed(pred);
  const span = finalAnswerSpan(pred);
  const candidates: Array<{ text: string; rule?: ScoreRule }> = [{ text: pred }];
  if (boxed !== null) candidates.push({ text: boxed, rule: 'boxed' });
  if (span !== null) candidates.push({ text: span, rule: 'answer-span' });
  for (const c of candidates) {
    for (const r of refs) {
      const how = sameAnswer(c.text, r);
      if (how) return { score: 1, rule: c.rule ?? how, ...(c.rule ? { compared: c.text.trim() } : {}) };
    }
  }
  const last = candidates[candidates.length - 1];
  return { score: 0, rule: last.rule ?? 'exact-text', ...(last.rule ? { compared: last.text.trim() } : {}) };
}
