// Imports benchmark files: AgentFlow's data.json (an array of {query or question, answer, pid, ...}) or
// JSONL with one such object per line. Bad items are reported by line (JSONL) or index (JSON) and skipped,
// before anything runs: an answer that is not a string, finite number or list of them (a reward could only
// read it through String(), which throws on {"toString": "boom"}), and a repeat of an earlier pid + question.
import { answerText, rewardKindFor, type RewardKind } from './rewards';

export interface BenchmarkItem {
  pid: string;
  query: string;
  /** A string, a finite number, or a non-empty list of them; undefined when the file gives none. */
  answer: unknown;
  /** Game of 24: the puzzle's numbers. */
  numbers?: number[];
  /** Multiple choice: the options in letter order. */
  options?: string[];
}

export interface ImportProblem {
  /** 1-based line in a JSONL file. */
  line?: number;
  /** 0-based index in a JSON array. */
  index?: number;
  message: string;
}

export interface ImportedBenchmark {
  name: string;
  kind: RewardKind;
  items: BenchmarkItem[];
  problems: ImportProblem[];
}

export function importBenchmark(text: string, fileName = 'benchmark.json'): ImportedBenchmark {
  const name = fileName.replace(/^.*[\\/]/, '').replace(/\.(jsonl|json|ndjson)$/i, '');
  const out: ImportedBenchmark = { name, kind: rewardKindFor(name), items: [], problems: [] };
  const trimmed = text.replace(/^\uFEFF/, '').trim();
  if (!trimmed) {
    out.problems.push({ message: `${fileName} is empty` });
    return out;
  }
  let whole: unknown;
  let isJson = false;
  if (trimmed.startsWith('[') || (trimmed.startsWith('{') && !/\}\s*\n\s*\{/.test(trimmed))) {
    try {
      whole = JSON.parse(trimmed);
      isJson = true;
    } catch (e) {
      if (trimmed.startsWith('[')) {
        out.problems.push({ message: `${fileName} is not valid JSON: ${(e as Error).message}` });
        return out;
      }
    }
  }
  if (isJson) {
    const list = Array.isArray(whole) ? whole : Array.isArray((whole as { data?: unknown })?.data) ? (whole as { data: unknown[] }).data : [whole];
    const seen = new Map<string, string>();
    list.forEach((raw, index) => add(out, raw, index, { index }, fileName, seen));
    return out;
  }
  const seen = new Map<string, string>();
  text.split(/\r?\n/).forEach((lineText, i) => {
    if (!lineText.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(lineText);
    } catch (e) {
      out.problems.push({ line: i + 1, message: `line ${i + 1} of ${fileName} is not valid JSON: ${(e as Error).message}` });
      return;
    }
    add(out, raw, out.items.length + out.problems.length, { line: i + 1 }, fileName, seen);
  });
  return out;
}

function add(out: ImportedBenchmark, raw: unknown, position: number, where: { line?: number; index?: number }, fileName: string, seen: Map<string, string>): void {
  const at = where.line !== undefined ? `line ${where.line}` : `item ${where.index}`;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    out.problems.push({ ...where, message: `${at} is not an object` });
    return;
  }
  const r = raw as Record<string, unknown>;
  const numbers = Array.isArray(r.question) && r.question.length > 0 && r.question.every((n) => Number.isFinite(n)) ? (r.question as number[]) : undefined;
  const query = typeof r.query === 'string' ? r.query : typeof r.question === 'string' ? r.question : typeof r.prompt === 'string' ? r.prompt : '';
  const bad = (message: string) => out.problems.push({ ...where, message: `${at} of ${fileName}: ${message}` });
  if (!query.trim()) {
    out.problems.push({ ...where, message: `${at} has no 'query' or 'question' text` });
    return;
  }
  const pidField = (['pid', 'idx', 'id'] as const).find((k) => r[k] !== undefined && r[k] !== null);
  const pid = pidField ? answerText(r[pidField]) : String(position);
  if (pid === null) {
    bad(`'${pidField}' is ${describe(r[pidField!])}, not a string or number`);
    return;
  }
  const answerField = (['answer', 'answers', 'reference'] as const).find((k) => r[k] !== undefined && r[k] !== null);
  const answer = answerField ? r[answerField] : undefined;
  const answerProblem = answerField ? checkAnswer(answer) : null;
  if (answerProblem) {
    bad(`'${answerField}'${answerProblem}; an answer is a string, a number or a list of them`);
    return;
  }
  if (out.kind === 'gameof24' && !numbers) {
    bad(`'question' is not the puzzle's numbers (a list of numbers), which the Game of 24 reward needs`);
    return;
  }
  // Compare matches runs item by item on pid and question: two such items would be one row, and its counts
  // would not add up to the run's. The first is kept; a repeat says where the first was.
  const key = `${pid}\u0000${query}`;
  const first = seen.get(key);
  if (first !== undefined) {
    bad(`repeats pid ${JSON.stringify(pid)} with the same question as ${first}; only the first is kept`);
    return;
  }
  seen.set(key, at);
  const item: BenchmarkItem = { pid, query, answer };
  if (numbers) item.numbers = numbers;
  const options = r.options ?? r.choices;
  if (Array.isArray(options) && options.every((o) => typeof o === 'string')) item.options = options as string[];
  out.items.push(item);
}

/** Why a (present) answer value is not one, as the end of a sentence naming its field, or null when it is. */
function checkAnswer(value: unknown): string | null {
  if (Array.isArray(value)) {
    if (!value.length) return ' is an empty list';
    for (let i = 0; i < value.length; i++) {
      if (answerText(value[i]) === null) return `[${i}] is ${describe(value[i])}`;
    }
    return null;
  }
  return answerText(value) === null ? ` is ${describe(value)}` : null;
}

/** What a JSON value is, for a message: JSON.parse reads 1e400 as Infinity, so say where that came from. */
function describe(value: unknown): string {
  if (typeof value === 'number') return Number.isNaN(value) ? 'not a number (NaN)' : `a number beyond a double's range (read as ${value})`;
  if (Array.isArray(value)) return `a list (${shortJson(value)})`;
  if (value && typeof value === 'object') return `an object (${shortJson(value)})`;
  return `${typeof value === 'boolean' ? 'a boolean' : typeof value} (${shortJson(value)})`;
}

function shortJson(value: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(typeof value);
  } catch {
    s = typeof value;
  }
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}
