// Two experiment runs item by item: what a user comparing a base planner with a trained adapter wants to
// see is which items changed, not two tables to read against each other. Pure; the Experiments tab renders it.
import type { ExperimentItemRecord } from '../../store/records';

/** How an item fared in run A and run B. */
export type ItemChange = 'both-right' | 'both-wrong' | 'right-in-a' | 'right-in-b' | 'only-in-a' | 'only-in-b' | 'unscored';

export interface ComparedItem {
  /** The benchmark item's number (as the subset box numbers it) when known, else its id. */
  label: string;
  query: string;
  reference: string;
  a: ExperimentItemRecord | null;
  b: ExperimentItemRecord | null;
  change: ItemChange;
}

export interface RunComparison {
  rows: ComparedItem[];
  counts: Record<ItemChange, number>;
  /**
   * Items left out of each run for repeating an earlier item's pid and question. The import keeps the first
   * of such items now; runs stored before that can hold repeats, and without this the rows' counts would not
   * add up to the runs' item counts.
   */
  repeated: { a: number; b: number };
}

// Runs of different benchmarks can share ids ("1", "2"): an item is the same only with the same question.
const keyOf = (it: ExperimentItemRecord) => `${it.pid}\u0000${it.query}`;

function changeOf(a: ExperimentItemRecord | null, b: ExperimentItemRecord | null): ItemChange {
  if (!a) return 'only-in-b';
  if (!b) return 'only-in-a';
  if (a.correct === undefined || b.correct === undefined) return 'unscored';
  if (a.correct && b.correct) return 'both-right';
  if (!a.correct && !b.correct) return 'both-wrong';
  return a.correct ? 'right-in-a' : 'right-in-b';
}

/** Items of runs `a` and `b` matched by benchmark item, in benchmark order (items without a number last). */
export function compareRuns(allA: readonly ExperimentItemRecord[], allB: readonly ExperimentItemRecord[]): RunComparison {
  // A run that sampled each item several times (`cli eval --samples K`) is compared on its first sample: the
  // others are not repeats of an item, and one outcome per item keeps the counts adding up to the items.
  const a = allA.filter((it) => !it.sample);
  const b = allB.filter((it) => !it.sample);
  const byKey = new Map<string, { a: ExperimentItemRecord | null; b: ExperimentItemRecord | null; first: ExperimentItemRecord; order: number }>();
  let order = 0;
  const repeated = { a: 0, b: 0 };
  for (const it of a) {
    if (byKey.has(keyOf(it))) repeated.a++;
    else byKey.set(keyOf(it), { a: it, b: null, first: it, order: order++ });
  }
  for (const it of b) {
    const seen = byKey.get(keyOf(it));
    if (!seen) byKey.set(keyOf(it), { a: null, b: it, first: it, order: order++ });
    else if (seen.b) repeated.b++;
    else seen.b = it;
  }
  const counts: Record<ItemChange, number> = { 'both-right': 0, 'both-wrong': 0, 'right-in-a': 0, 'right-in-b': 0, 'only-in-a': 0, 'only-in-b': 0, unscored: 0 };
  const rows = [...byKey.values()]
    .sort((x, y) => (x.first.number ?? Infinity) - (y.first.number ?? Infinity) || x.order - y.order)
    .map(({ a: ia, b: ib, first }) => {
      const change = changeOf(ia, ib);
      counts[change]++;
      return { label: String(first.number ?? first.pid), query: first.query, reference: first.reference, a: ia, b: ib, change };
    });
  return { rows, counts, repeated };
}

/** One sentence of the counts, leaving out what is 0: "2 right in both, 1 right only in B, 1 only in run A." */
export function describeComparison(counts: Record<ItemChange, number>, repeated: { a: number; b: number } = { a: 0, b: 0 }): string {
  const parts: Array<[ItemChange, string]> = [
    ['right-in-a', 'right only in A'],
    ['right-in-b', 'right only in B'],
    ['both-right', 'right in both'],
    ['both-wrong', 'wrong in both'],
    ['unscored', 'not scored in one of them'],
    ['only-in-a', 'only in run A'],
    ['only-in-b', 'only in run B'],
  ];
  const said = parts.filter(([k]) => counts[k] > 0).map(([k, words]) => `${counts[k]} ${words}`);
  const left = (['a', 'b'] as const)
    .filter((r) => repeated[r] > 0)
    .map((r) => `${repeated[r]} item${repeated[r] === 1 ? '' : 's'} of run ${r.toUpperCase()} left out as repeats of an earlier item (same pid and question)`);
  return said.length ? `Item by item: ${said.join(', ')}.${left.length ? ` ${left.join('; ')}.` : ''}` : 'Neither run has items yet.';
}

/**
 * Short labels for runs shown together (a chart's bars): the parts of their names (" · "-separated: model
 * and adapter, benchmark × items, date) that are not the same in all of them. Names of runs from one
 * benchmark and model differ only in the end, which a cut label loses.
 */
export function distinctLabels(names: readonly string[]): string[] {
  const parts = names.map((n) => n.split(' · '));
  if (names.length < 2 || parts.some((p) => p.length !== parts[0].length)) return [...names];
  const varies = parts[0].map((_, i) => parts.some((p) => p[i] !== parts[0][i]));
  if (!varies.some(Boolean)) return [...names];
  // Within a date that varies, a day all of them share goes too ("2026-11-26 16:30" and "2026-11-26 16:30 (2)"
  // are "16:30" and "16:30 (2)"): a chart cuts a long label at its end, which is where runs of a day differ.
  const trimmed = parts[0].map((_, i) => (varies[i] ? dropSharedDay(parts.map((p) => p[i])) : null));
  return parts.map((p, k) => p.flatMap((_, i) => (varies[i] ? [trimmed[i]![k]] : [])).join(' · '));
}

/** The values without a leading date (2026-11-26) they all share, when each has more after it. */
function dropSharedDay(values: string[]): string[] {
  const words = values.map((v) => v.split(' '));
  const day = words[0][0];
  const shared = /^\d{4}-\d\d-\d\d$/.test(day) && words.every((w) => w.length > 1 && w[0] === day);
  return shared ? words.map((w) => w.slice(1).join(' ')) : values;
}
