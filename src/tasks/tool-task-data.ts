// The questions of the tool-choice task (`cli train --task tools`): four kinds, each answerable only through
// one tool of the task — arithmetic through Python, a fact through the lookup table, a unit conversion through
// the converter — and a two-part kind that needs two of them, one per turn. Everything here is plain data and
// pure functions (no Node or browser API), so a page builds the same items from the same seed.
import { CAPITALS, convertUnits, evaluateExpression, formatNumber, isExpression, SYMBOLS, UNITS } from '../tools/offline-tables';
import { Rng } from '../util/rng';

/** The conversions questions ask for (pairs whose factor is not a power of ten, bar km/m). */
const CONVERSIONS: ReadonlyArray<readonly [string, string]> = [
  ['mi', 'km'], ['km', 'mi'], ['ft', 'm'], ['in', 'cm'], ['lb', 'kg'], ['kg', 'lb'], ['oz', 'g'], ['gal', 'l'], ['h', 's'], ['km', 'm'],
];

/** The tool each part of a question needs. */
export type PartTool = 'python' | 'lookup' | 'convert';

/** One thing a question asks, with what the tool call that answers it takes. */
export type QuestionPart =
  | { tool: 'python'; expression: string }
  | { tool: 'lookup'; entity: string; attribute: 'capital' | 'symbol' }
  | { tool: 'convert'; value: number; from: string; to: string };

export type QuestionKind = 'arithmetic' | 'fact' | 'conversion' | 'two-part';

export interface ToolTaskItem {
  pid: string;
  kind: QuestionKind;
  query: string;
  answer: string;
}

function partText(p: QuestionPart): string {
  if (p.tool === 'python') return `what is ${p.expression}`;
  if (p.tool === 'lookup') return p.attribute === 'capital' ? `what is the capital of ${p.entity}` : `what is the chemical symbol of ${p.entity}`;
  return `how many ${p.to} are ${formatNumber(p.value)} ${p.from}`;
}

/** The answer to one part, as the tool that answers it writes it. */
export function partAnswer(p: QuestionPart): string {
  if (p.tool === 'python') return formatNumber(evaluateExpression(p.expression));
  if (p.tool === 'lookup') return (p.attribute === 'capital' ? CAPITALS : SYMBOLS)[p.entity];
  const r = convertUnits(p.value, p.from, p.to);
  if (!r.ok) throw new Error(`tool task: ${r.error}`);
  return formatNumber(r.value);
}

/** How a question's parts are joined in the query and in its answer. */
const PART_JOIN = ', and ';
export const ANSWER_JOIN = '; ';

export function questionText(parts: QuestionPart[]): string {
  const body = parts.map(partText).join(PART_JOIN);
  return body.charAt(0).toUpperCase() + body.slice(1) + '?';
}

/** Reads a query of this task back into its parts (what the fixed modules do); null for any other text. */
export function parseQuestion(query: string): QuestionPart[] | null {
  const q = query.trim();
  if (!q.endsWith('?')) return null;
  const body = q.slice(0, -1);
  const parts: QuestionPart[] = [];
  for (const raw of body.split(PART_JOIN)) {
    const s = raw.charAt(0).toLowerCase() + raw.slice(1);
    let m: RegExpExecArray | null;
    if ((m = /^what is the capital of ([A-Z][A-Za-z ]*)$/.exec(s)) && CAPITALS[m[1]]) parts.push({ tool: 'lookup', entity: m[1], attribute: 'capital' });
    else if ((m = /^what is the chemical symbol of ([a-z]+)$/.exec(s)) && SYMBOLS[m[1]]) parts.push({ tool: 'lookup', entity: m[1], attribute: 'symbol' });
    else if ((m = /^how many ([a-z]+) are (\d+(?:\.\d+)?) ([a-z]+)$/.exec(s)) && UNITS[m[1]] && UNITS[m[3]]) parts.push({ tool: 'convert', value: Number(m[2]), from: m[3], to: m[1] });
    else if ((m = /^what is ([\d +*-]+)$/.exec(s)) && isExpression(m[1])) parts.push({ tool: 'python', expression: m[1] });
    else return null;
  }
  return parts.length ? parts : null;
}

/** The item a list of parts makes: its query and the answer the tools' results give. */
export function itemOf(pid: string, kind: QuestionKind, parts: QuestionPart[]): ToolTaskItem {
  return { pid, kind, query: questionText(parts), answer: parts.map(partAnswer).join(ANSWER_JOIN) };
}

export const KINDS: readonly QuestionKind[] = ['arithmetic', 'fact', 'conversion', 'two-part'];

/** Checks a per-kind setting (`field`: its name in messages): known kinds only, each an integer from 1 to `max`. */
export function checkKindNumbers(field: string, values: Partial<Record<QuestionKind, number>>, max: number): void {
  for (const [k, v] of Object.entries(values)) {
    if (!KINDS.includes(k as QuestionKind)) throw new Error(`tool task: ${field} names '${k}', not a question kind (${KINDS.join(', ')})`);
    if (!Number.isInteger(v) || v! < 1 || v! > max) throw new Error(`tool task: ${field}.${k} must be an integer from 1 to ${max}, got ${v}`);
  }
}

export interface ToolTaskSplits {
  train: ToolTaskItem[];
  heldOut: ToolTaskItem[];
}

export interface SplitOptions {
  /** Questions of each kind in the training split. */
  trainPerKind?: number;
  /** Questions of each kind in the held-out split. */
  heldOutPerKind?: number;
  /**
   * Training questions of the kinds named, instead of trainPerKind (e.g. `{"two-part": 108}`: the two-part kind
   * has four pairs of parts and many more distinct questions than the fact kind's entities allow). Changing the
   * counts draws other questions for both splits (one seeded draw makes them).
   */
  trainCounts?: Partial<Record<QuestionKind, number>>;
}

/**
 * A training and a held-out split of different questions, drawn from `seed`: the fact entities are divided
 * between the splits (a held-out fact is about a country or element no training question names), and any
 * query drawn twice is drawn again, so no query is in both splits.
 */
export function toolTaskSplits(seed: number, o: SplitOptions = {}): ToolTaskSplits {
  const trainN = o.trainPerKind ?? 12;
  const heldN = o.heldOutPerKind ?? 8;
  for (const [name, v] of [['trainPerKind', trainN], ['heldOutPerKind', heldN]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 200) throw new Error(`tool task: '${name}' must be an integer from 1 to 200, got ${v}`);
  }
  checkKindNumbers('trainCounts', o.trainCounts ?? {}, 200);
  const rng = new Rng(seed);
  const shuffle = <T>(a: T[]): T[] => {
    for (let i = a.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  };
  const factPool = shuffle([...Object.keys(CAPITALS).map((e) => ({ entity: e, attribute: 'capital' as const })), ...Object.keys(SYMBOLS).map((e) => ({ entity: e, attribute: 'symbol' as const }))]);
  const cut = Math.round(factPool.length * 0.6);
  const factsFor = { train: factPool.slice(0, cut), heldOut: factPool.slice(cut) };
  const seen = new Set<string>();
  const draw = (split: 'train' | 'heldOut', kind: QuestionKind): QuestionPart[] => {
    const arithmetic = (): QuestionPart => {
      const ops = ['+', '-', '*'];
      const n = 2 + rng.int(2);
      let e = String(2 + rng.int(98));
      for (let i = 1; i < n; i++) e += ` ${ops[rng.int(3)]} ${2 + rng.int(98)}`;
      return { tool: 'python', expression: e };
    };
    const fact = (): QuestionPart => {
      const f = factsFor[split][rng.int(factsFor[split].length)];
      return { tool: 'lookup', entity: f.entity, attribute: f.attribute };
    };
    const conversion = (): QuestionPart => {
      const [from, to] = CONVERSIONS[rng.int(CONVERSIONS.length)];
      return { tool: 'convert', value: 2 + rng.int(98), from, to };
    };
    const one = { arithmetic, fact, conversion };
    if (kind !== 'two-part') return [one[kind]()];
    const pairs: Array<[keyof typeof one, keyof typeof one]> = [['arithmetic', 'fact'], ['fact', 'conversion'], ['conversion', 'arithmetic'], ['fact', 'arithmetic']];
    const [a, b] = pairs[rng.int(pairs.length)];
    return [one[a](), one[b]()];
  };
  const make = (split: 'train' | 'heldOut', perKind: number): ToolTaskItem[] => {
    const items: ToolTaskItem[] = [];
    for (const kind of KINDS) {
      const n = (split === 'train' ? o.trainCounts?.[kind] : undefined) ?? perKind;
      for (let i = 0, tries = 0; i < n; tries++) {
        if (tries > 10_000) throw new Error(`tool task: cannot draw ${n} different ${kind} questions for the ${split} split`);
        const item = itemOf(`${split}-${kind}-${i + 1}`, kind, draw(split, kind));
        if (seen.has(item.query)) continue;
        seen.add(item.query);
        items.push(item);
        i++;
      }
    }
    return shuffle(items);
  };
  return { train: make('train', trainN), heldOut: make('heldOut', heldN) };
}
