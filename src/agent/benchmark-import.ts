// Imports benchmark files: AgentFlow's data.json (an array of {query or question, answer, pid, ...}) or
// JSONL with one such object per line. Bad items are reported by line (JSONL) or index (JSON) and skipped.
import { rewardKindFor, type RewardKind } from './rewards';

export interface BenchmarkItem {
  pid: string;
  query: string;
  /** A string, a list of accepted strings, or a number; undefined when the file gives none. */
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
    list.forEach((raw, index) => add(out, raw, index, { index }));
    return out;
  }
  text.split(/\r?\n/).forEach((lineText, i) => {
    if (!lineText.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(lineText);
    } catch (e) {
      out.problems.push({ line: i + 1, message: `line ${i + 1} of ${fileName} is not valid JSON: ${(e as Error).message}` });
      return;
    }
    add(out, raw, out.items.length + out.problems.length, { line: i + 1 });
  });
  return out;
}

function add(out: ImportedBenchmark, raw: unknown, position: number, where: { line?: number; index?: number }): void {
  const at = where.line !== undefined ? `line ${where.line}` : `item ${where.index}`;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    out.problems.push({ ...where, message: `${at} is not an object` });
    return;
  }
  const r = raw as Record<string, unknown>;
  const numbers = Array.isArray(r.question) && r.question.every((n) => typeof n === 'number') ? (r.question as number[]) : undefined;
  const query = typeof r.query === 'string' ? r.query : typeof r.question === 'string' ? r.question : typeof r.prompt === 'string' ? r.prompt : '';
  if (!query.trim()) {
    out.problems.push({ ...where, message: `${at} has no 'query' or 'question' text` });
    return;
  }
  const pid = r.pid ?? r.idx ?? r.id ?? position;
  const item: BenchmarkItem = { pid: String(pid), query, answer: r.answer ?? r.answers ?? r.reference };
  if (numbers) item.numbers = numbers;
  const options = r.options ?? r.choices;
  if (Array.isArray(options) && options.every((o) => typeof o === 'string')) item.options = options as string[];
  out.items.push(item);
}
