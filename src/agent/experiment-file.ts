// An evaluation run as files, the one format `cli eval` writes and the Experiments tab imports and exports:
// `results.jsonl` (one line per item and sample), `summary.json` (accuracy, counts, model, adapter, settings),
// or both in one `experiment.json`. Each line is the item record the tab stores (ExperimentItemRecord) under
// readable names, so a run made headless opens in the tab and Compare matches it item by item against a run
// made there. Also the record of one agent run on one item, scored, which the tab's runner and `cli eval` both
// make from the same loop result. Pure: no storage, no DOM.
import type { AgentRunResult } from './loop';
import { scoreAnswerDetail, type RewardKind } from './rewards';
import type { ExperimentItemRecord, ExperimentRecord, StepRecord } from '../store/records';

export const EXPERIMENT_FORMAT = 'agentflow-experiment';
/** Version 2: `summary` + `results` lines. Version 1 (the tab's export before) held the stored records as they are. */
export const EXPERIMENT_VERSION = 2;

/** One line of results.jsonl: one item (one sample of it, with --samples). */
export interface ResultLine {
  pid: string;
  /** 1-based position in the benchmark file. */
  number?: number;
  /** 0-based sample of the item (several runs per item); absent means 0. */
  sample?: number;
  question: string;
  expected: string;
  /** The final answer; null when the run gave none. */
  given: string | null;
  /** null when the item has no reference answer. */
  correct: boolean | null;
  turns?: number;
  /** Executor calls by tool name. */
  tools: Record<string, number>;
  seconds?: number;
  scoring?: { rule: string; compared?: string };
  errors?: string[];
}

/** summary.json. */
export interface EvalSummary extends ExperimentSummary {
  name: string;
  createdAt: number;
  status: ExperimentRecord['status'];
  /** Distinct benchmark items (results lines / samples per item). */
  distinctItems: number;
  samplesPerItem: number;
  model: string | null;
  adapter: string | null;
  benchmark: string;
  rewardKind: string;
  settings: Record<string, unknown>;
}

export interface ExperimentSummary {
  /** Results lines (items × samples). */
  items: number;
  answered: number;
  correct: number;
  /** correct / items: with several samples per item, the mean over them. */
  accuracy: number;
  toolCalls: number;
  errors: number;
  [tool: `tool:${string}`]: number;
}

/** Accuracy over the items run so far, and tool calls by tool. */
export function summarize(items: readonly ExperimentItemRecord[]): ExperimentSummary {
  const s: ExperimentSummary = { items: items.length, answered: 0, correct: 0, accuracy: 0, toolCalls: 0, errors: 0 };
  for (const it of items) {
    if (it.answer !== undefined) s.answered++;
    if (it.correct) s.correct++;
    s.errors += it.errors?.length ?? 0;
    for (const [tool, n] of Object.entries(it.toolCalls ?? {})) {
      s[`tool:${tool}`] = (s[`tool:${tool}`] ?? 0) + n;
      s.toolCalls += n;
    }
  }
  s.accuracy = s.items ? s.correct / s.items : 0;
  return s;
}

/** Tool name -> number of executor calls; and the error messages, for experiment results. */
export function toolUsage(steps: readonly StepRecord[]): { toolCalls: Record<string, number>; errors: string[] } {
  const toolCalls: Record<string, number> = {};
  const errors: string[] = [];
  for (const s of steps) {
    if (s.kind === 'executor') {
      if (typeof s.data.toolName === 'string' && s.data.args) toolCalls[s.data.toolName] = (toolCalls[s.data.toolName] ?? 0) + 1;
      if (s.data.error) errors.push(`turn ${s.turn}: ${String(s.data.error)}`);
    }
    if (s.kind === 'error') errors.push(`turn ${s.turn} ${String(s.data.module ?? '')}: ${String(s.data.message ?? '')}`);
  }
  return { toolCalls, errors };
}

export interface ScoredItem {
  pid: string;
  query: string;
  answer?: unknown;
  numbers?: number[];
  options?: string[];
}

/**
 * Fills `rec` from a finished agent run on `item`: the answer, whether it is right (`reward` when the caller
 * scored it already, as a session with a judge does; else the rule), which rule said so, tools and errors.
 */
export function scoreRunInto(rec: ExperimentItemRecord, item: ScoredItem, kind: RewardKind, run: Pick<AgentRunResult, 'finalAnswer' | 'steps' | 'turns' | 'status' | 'error'>, reward?: number): ExperimentItemRecord {
  if (run.finalAnswer !== null) rec.answer = run.finalAnswer;
  rec.turns = run.turns;
  if (item.answer !== undefined && item.answer !== null) {
    const d = scoreAnswerDetail({ kind, prediction: run.finalAnswer ?? '', reference: item.answer, numbers: item.numbers, options: item.options });
    rec.correct = (reward ?? d.score) >= 1;
    rec.scoring = d.score === (rec.correct ? 1 : 0) ? { rule: d.rule, ...(d.compared !== undefined ? { compared: d.compared } : {}) } : { rule: 'judge' };
  }
  const usage = toolUsage(run.steps);
  rec.toolCalls = usage.toolCalls;
  rec.errors = [...usage.errors, ...(run.error ? [run.error] : []), ...(run.status === 'interrupted' ? ['stopped'] : [])];
  return rec;
}

export function referenceText(answer: unknown): string {
  return typeof answer === 'string' ? answer : JSON.stringify(answer ?? null);
}

export function itemToLine(it: ExperimentItemRecord): ResultLine {
  return {
    pid: it.pid,
    ...(it.number !== undefined ? { number: it.number } : {}),
    ...(it.sample !== undefined ? { sample: it.sample } : {}),
    question: it.query,
    expected: it.reference,
    given: it.answer ?? null,
    correct: it.correct ?? null,
    ...(it.turns !== undefined ? { turns: it.turns } : {}),
    tools: it.toolCalls ?? {},
    ...(it.seconds !== undefined ? { seconds: it.seconds } : {}),
    ...(it.scoring ? { scoring: it.scoring } : {}),
    ...(it.errors?.length ? { errors: it.errors } : {}),
  };
}

/** The planner model of an engine id ('planner:Qwen2.5-0.5B-Instruct' -> 'Qwen2.5-0.5B-Instruct'). */
const modelOf = (id: unknown) => (typeof id === 'string' ? id.replace(/^(planner|web-llm|shared):/, '') : null);

/** summary.json of a run (the tab's or the CLI's). */
export function summaryOf(exp: ExperimentRecord, items: readonly ExperimentItemRecord[]): EvalSummary {
  const c = exp.config as { benchmark?: string; rewardKind?: string; engines?: unknown[]; adapter?: { name?: string } | null; maxTurns?: number; tools?: string[]; settings?: Record<string, unknown> };
  const samples = Math.max(1, ...items.map((i) => (i.sample ?? 0) + 1));
  const distinct = new Set(items.map((i) => `${i.pid}\u0000${i.query}`)).size;
  return {
    name: exp.name,
    createdAt: exp.createdAt,
    status: exp.status,
    ...summarize(items),
    distinctItems: distinct,
    samplesPerItem: samples,
    model: modelOf(c.engines?.[0]),
    adapter: c.adapter?.name ?? null,
    benchmark: c.benchmark ?? '',
    rewardKind: c.rewardKind ?? '',
    settings: { maxTurns: c.maxTurns, tools: c.tools ?? [], samples, ...c.settings },
  };
}

/** experiment.json: summary and results in one file. */
export function experimentFile(exp: ExperimentRecord, items: readonly ExperimentItemRecord[]): string {
  return JSON.stringify({ format: EXPERIMENT_FORMAT, version: EXPERIMENT_VERSION, summary: summaryOf(exp, items), results: [...items].sort((a, b) => a.index - b.index).map(itemToLine) }, null, 2);
}

export function resultsJsonl(items: readonly ExperimentItemRecord[]): string {
  return items.map((i) => `${JSON.stringify(itemToLine(i))}\n`).join('');
}

export class ExperimentFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExperimentFileError';
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function lineToItem(v: unknown, where: string, experimentId: string, index: number): ExperimentItemRecord {
  if (!isObj(v)) throw new ExperimentFileError(`${where} is not a JSON object`);
  const str = (k: string, allowNull = false) => {
    const x = v[k];
    if (typeof x === 'string') return x;
    if (allowNull && (x === null || x === undefined)) return null;
    if (typeof x === 'number' && k === 'pid') return String(x);
    throw new ExperimentFileError(`${where}: "${k}" must be a string${allowNull ? ' or null' : ''}`);
  };
  const int = (k: string, min: number) => {
    const x = v[k];
    if (x === undefined) return undefined;
    if (!Number.isSafeInteger(x) || (x as number) < min) throw new ExperimentFileError(`${where}: "${k}" must be an integer >= ${min}`);
    return x as number;
  };
  if (v.correct !== null && v.correct !== undefined && typeof v.correct !== 'boolean') throw new ExperimentFileError(`${where}: "correct" must be true, false or null (absent: unscored)`);
  const tools = v.tools ?? {};
  if (!isObj(tools) || !Object.values(tools).every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) throw new ExperimentFileError(`${where}: "tools" must map tool names to counts`);
  if (v.seconds !== undefined && !(typeof v.seconds === 'number' && Number.isFinite(v.seconds) && v.seconds >= 0)) throw new ExperimentFileError(`${where}: "seconds" must be a number >= 0`);
  if (v.errors !== undefined && !(Array.isArray(v.errors) && v.errors.every((e) => typeof e === 'string'))) throw new ExperimentFileError(`${where}: "errors" must be a list of strings`);
  const scoring = v.scoring;
  if (scoring !== undefined && !(isObj(scoring) && typeof scoring.rule === 'string')) throw new ExperimentFileError(`${where}: "scoring" must be {"rule": ...}`);
  const given = str('given', true);
  const rec: ExperimentItemRecord = { experimentId, index, pid: str('pid')!, query: str('question')!, reference: str('expected')! };
  const number = int('number', 1);
  const sample = int('sample', 0);
  const turns = int('turns', 0);
  if (number !== undefined) rec.number = number;
  if (sample !== undefined) rec.sample = sample;
  if (given !== null) rec.answer = given;
  if (typeof v.correct === 'boolean') rec.correct = v.correct;
  if (turns !== undefined) rec.turns = turns;
  rec.toolCalls = tools as Record<string, number>;
  if (v.seconds !== undefined) rec.seconds = v.seconds as number;
  if (scoring) rec.scoring = { rule: scoring.rule as string, ...(typeof scoring.compared === 'string' ? { compared: scoring.compared } : {}) };
  rec.errors = (v.errors as string[] | undefined) ?? [];
  return rec;
}

/** results.jsonl's lines; a line that is not a result is named by number. */
export function parseResultsJsonl(text: string, file = 'results.jsonl', experimentId = ''): ExperimentItemRecord[] {
  const out: ExperimentItemRecord[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      throw new ExperimentFileError(`line ${i + 1} of ${file} is not valid JSON (${(e as Error).message})`);
    }
    out.push(lineToItem(v, `line ${i + 1} of ${file}`, experimentId, out.length));
  });
  if (!out.length) throw new ExperimentFileError(`${file} has no results`);
  return out;
}

export interface ImportedRun {
  experiment: ExperimentRecord;
  items: ExperimentItemRecord[];
}

/** A run from its summary.json (parsed) and results; the record is given a new id (`id`). */
export function runFromFiles(summary: unknown, items: ExperimentItemRecord[], id: string, file = 'summary.json'): ImportedRun {
  if (!isObj(summary)) throw new ExperimentFileError(`${file} is not a JSON object`);
  const s = summary as Partial<EvalSummary>;
  const settings = isObj(s.settings) ? s.settings : {};
  const status = (['running', 'done', 'error', 'interrupted'] as const).find((x) => x === s.status) ?? 'done';
  const name = typeof s.name === 'string' && s.name.trim() ? s.name.trim() : `${s.model ?? 'model'} · ${s.benchmark || 'benchmark'} × ${items.length}`;
  const rows = items.map((it, index) => ({ ...it, experimentId: id, index }));
  const experiment: ExperimentRecord = {
    id,
    createdAt: typeof s.createdAt === 'number' && Number.isFinite(s.createdAt) ? s.createdAt : Date.now(),
    name,
    status,
    config: {
      benchmark: s.benchmark ?? '',
      rewardKind: s.rewardKind ?? '',
      indices: rows.map((r) => (r.number ?? 1) - 1),
      ...(typeof settings.maxTurns === 'number' ? { maxTurns: settings.maxTurns } : {}),
      engines: s.model ? [`planner:${s.model}`] : [],
      adapter: typeof s.adapter === 'string' ? { id: '', name: s.adapter } : null,
      tools: Array.isArray(settings.tools) ? settings.tools : [],
      settings,
      imported: true,
    },
    total: rows.length,
    summary: { ...summarize(rows) },
  };
  return { experiment, items: rows };
}

/**
 * A file the Experiments tab imports as a run: experiment.json (version 2), the tab's own version-1 export,
 * or results.jsonl (with `summary`, summary.json's text, when the user gave it too).
 */
export function parseExperimentFile(text: string, fileName: string, id: string, summaryText?: string): ImportedRun {
  const trimmed = text.trimStart();
  let whole: unknown;
  if (trimmed.startsWith('{')) {
    try {
      whole = JSON.parse(text);
    } catch {
      whole = undefined; // results.jsonl of one line, or a bad file: read as JSONL below.
    }
  }
  if (isObj(whole) && whole.format === EXPERIMENT_FORMAT) {
    if (whole.version === 1) {
      const exp = whole.experiment as ExperimentRecord;
      if (!isObj(exp) || !Array.isArray(whole.items)) throw new ExperimentFileError(`${fileName}: version 1 needs "experiment" and "items"`);
      const items = (whole.items as ExperimentItemRecord[]).map((it, index) => ({ ...it, experimentId: id, index }));
      return { experiment: { ...exp, id, total: items.length, summary: { ...summarize(items) } }, items };
    }
    if (whole.version !== EXPERIMENT_VERSION) throw new ExperimentFileError(`${fileName}: version ${String(whole.version)} is not one this page reads (1 or 2)`);
    if (!Array.isArray(whole.results) || !whole.results.length) throw new ExperimentFileError(`${fileName} has no "results"`);
    const items = whole.results.map((r, i) => lineToItem(r, `result ${i + 1} of ${fileName}`, id, i));
    return runFromFiles(whole.summary, items, id, `${fileName} "summary"`);
  }
  if (isObj(whole) && 'accuracy' in whole && !('question' in whole)) throw new ExperimentFileError(`${fileName} is a summary.json: import results.jsonl with it (or experiment.json)`);
  const items = parseResultsJsonl(text, fileName, id);
  let summary: unknown = {};
  if (summaryText !== undefined) {
    try {
      summary = JSON.parse(summaryText);
    } catch (e) {
      throw new ExperimentFileError(`summary.json is not valid JSON (${(e as Error).message})`);
    }
  }
  return runFromFiles(summary, items, id);
}
