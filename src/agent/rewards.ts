// Rewards for finished runs: a single verifiable outcome per run that Flow-GRPO broadcasts to every planner
// turn. Each checker is strict about what counts as right and tolerant about formatting.
import type { ChatEngine } from '../engine/types';
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

/** True when both state the same number (relative tolerance for decimals). */
export function numericMatch(prediction: string, reference: unknown, tolerance = 1e-6): boolean {
  const p = finalNumber(prediction);
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
  const res = await engine.chat(
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
  );
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
 * 1 when the prediction is right, else 0. Never throws: a training run scores every rollout with it, and an
 * answer no rule can read (an object, NaN, a list of lists) is wrong, not a reason to stop the run.
 */
export function scoreAnswer(input: RewardInput): number {
  try {
    return scoreOrThrow(input);
  } catch {
    // Only exotic values get here (a revoked Proxy throws even from Array.isArray); the cases above handle
    // every value JSON can hold.
    return 0;
  }
}

function scoreOrThrow(input: RewardInput): number {
  const given = answerText(input.prediction);
  if (given === null) return 0;
  const pred = extractAnswerTag(given) ?? given;
  switch (input.kind) {
    case 'exact':
      return exactMatch(pred, input.reference) ? 1 : 0;
    case 'numeric':
      return numericMatch(pred, input.reference) ? 1 : 0;
    case 'choice': {
      // Options with a non-string in them cannot be matched by letter position: use none.
      const options = Array.isArray(input.options) && input.options.every((o) => typeof o === 'string') ? input.options : [];
      return refList(input.reference).some((ref) => choiceMatch(pred, ref, options)) ? 1 : 0;
    }
    case 'gameof24': {
      // The import reports a Game of 24 item without its numbers; a caller that still passes none scores 0.
      const numbers = input.numbers;
      if (!Array.isArray(numbers) || !numbers.length || !numbers.every((n) => Number.isFinite(n))) return 0;
      return checkGame24(game24Expression(pred), numbers).ok ? 1 : 0;
    }
    default:
      return 0;
  }
}
