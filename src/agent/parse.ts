// Parsers for what the agent's modules write. Small models break format often, so every parser tries
// structured JSON first (bare, fenced, or followed by chatter), then labelled fields ("Sub-Goal: ..."),
// then a safe default, and says which of the three it used. No parser throws on any input.
import type { ToolCard } from '../tools/tool';
import { normalizeKey, validateArgs } from '../tools/validate';

/** Bounds the work a parser does on a runaway generation. */
const MAX_SCAN_CHARS = 40_000;
const MAX_CANDIDATES = 24;

export type ParseMethod = 'json' | 'fields' | 'default';

/** Objects found in `text`, best candidates first: fenced blocks, then balanced {...} spans, each repaired if needed. */
export function extractJsonObjects(text: string): Record<string, unknown>[] {
  const src = typeof text === 'string' ? text.slice(0, MAX_SCAN_CHARS) : '';
  const candidates: string[] = [];
  for (const f of fencedBlocks(src)) {
    if (candidates.length >= MAX_CANDIDATES) break;
    const body = f.body.trim();
    if (f.closed && body.startsWith('{')) candidates.push(...balancedSpans(body, 2));
  }
  candidates.push(...balancedSpans(src, MAX_CANDIDATES - candidates.length));
  const out: Record<string, unknown>[] = [];
  for (const c of candidates) {
    const obj = parseLooseJson(c);
    if (obj) out.push(obj);
  }
  return out;
}

/**
 * Markdown code blocks: ``` + optional language + newline, up to the closing ``` (or the end, closed=false).
 * Scanned by hand in one pass: a regex here backtracks quadratically on runaway "`````...".
 */
export function fencedBlocks(src: string): Array<{ lang: string; body: string; closed: boolean }> {
  const out: Array<{ lang: string; body: string; closed: boolean }> = [];
  let i = src.indexOf('```');
  while (i >= 0 && out.length < MAX_CANDIDATES) {
    const nl = src.indexOf('\n', i + 3);
    const header = nl < 0 ? '' : src.slice(i + 3, nl);
    if (nl < 0 || header.length > 40 || header.includes('`')) {
      i = src.indexOf('```', i + 3);
      continue;
    }
    const close = src.indexOf('```', nl + 1);
    const lang = /^[ \t]*([A-Za-z0-9_+-]*)/.exec(header)?.[1] ?? '';
    out.push({ lang, body: src.slice(nl + 1, close < 0 ? src.length : close), closed: close >= 0 });
    if (close < 0) break;
    i = src.indexOf('```', close + 3);
  }
  return out;
}

/** The first JSON object in `text`, or null. */
export function extractJson(text: string): Record<string, unknown> | null {
  return extractJsonObjects(text)[0] ?? null;
}

/** Top-level {...} spans with balanced braces, honouring strings; an unclosed one is closed at the end. */
function balancedSpans(src: string, limit: number): string[] {
  const spans: string[] = [];
  let i = src.indexOf('{');
  while (i >= 0 && spans.length < limit) {
    let depth = 0;
    let inStr: string | null = null;
    let end = -1;
    // The last comma between members, and the depth there: where a cut-off object's last whole member ends.
    let lastComma = -1;
    let commaDepth = 0;
    for (let j = i; j < src.length; j++) {
      const ch = src[j];
      if (inStr) {
        if (ch === '\\') j++;
        else if (ch === inStr) inStr = null;
      } else if (ch === '"') inStr = ch;
      else if (ch === ',') {
        lastComma = j;
        commaDepth = depth;
      } else if (ch === '{') depth++;
      else if (ch === '}') {
        depth--;
        if (depth === 0) {
          end = j;
          break;
        }
      }
    }
    if (end < 0) {
      // Generation cut off by the token limit: close what is open (a string cut inside an escape loses the
      // escape); failing that (cut inside a key, or after its colon), drop the member being written.
      const head = inStr ? withoutOpenEscape(src.slice(i)) : src.slice(i);
      spans.push(head + (inStr ? inStr : '') + '}'.repeat(Math.max(1, depth)));
      if (lastComma > i && spans.length < limit) spans.push(src.slice(i, lastComma) + '}'.repeat(Math.max(1, commaDepth)));
      break;
    }
    spans.push(src.slice(i, end + 1));
    i = src.indexOf('{', end + 1);
  }
  return spans;
}

/** `s` without an escape its end cuts short (a lone backslash, or \\u with under four hex digits). */
function withoutOpenEscape(s: string): string {
  const m = /(\\+)(u[0-9a-fA-F]{0,3})?$/.exec(s);
  if (!m) return s;
  const slashes = m[1].length;
  // An even run of backslashes is whole escaped backslashes; then only an odd one opens an escape.
  if (slashes % 2 === 0) return s;
  return s.slice(0, m.index + slashes - 1);
}

function parseLooseJson(s: string): Record<string, unknown> | null {
  const attempts = [
    s,
    // Trailing commas, single-quoted strings, unquoted keys, Python literals: common small-model slips.
    s
      .replace(/,\s*([}\]])/g, '$1')
      .replace(/([{,]\s*)'([^'"\n]*)'\s*:/g, '$1"$2":')
      .replace(/:\s*'([^'\n]*)'/g, (_m, v: string) => `: ${JSON.stringify(v)}`)
      .replace(/([{,]\s*)([A-Za-z_][A-Za-z0-9_ -]{0,40}?)\s*:/g, (m, pre: string, key: string) =>
        /^(true|false|null)$/.test(key) ? m : `${pre}"${key}":`,
      )
      .replace(/:\s*True\b/g, ': true')
      .replace(/:\s*False\b/g, ': false')
      .replace(/:\s*None\b/g, ': null'),
    // Raw newlines inside strings.
    s.replace(/\n/g, '\\n'),
  ];
  for (const a of attempts) {
    try {
      const v: unknown = JSON.parse(a);
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // next attempt
    }
  }
  return null;
}

/** 'Sub-Goal', 'sub_goal', 'subGoal' -> 'subgoal'. */
export { normalizeKey };

function pick(obj: Record<string, unknown>, keys: string[]): unknown {
  const want = new Set(keys.map(normalizeKey));
  for (const [k, v] of Object.entries(obj)) if (want.has(normalizeKey(k))) return v;
  return undefined;
}

function asText(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v.trim();
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return '';
  }
}

/**
 * Values of labelled fields ("Sub-Goal: ...", "**Tool Name**: ..."), keyed by normalized label. A field runs
 * until the next known label or the end.
 */
export function extractFields(text: string, labels: string[]): Record<string, string> {
  const src = typeof text === 'string' ? text.slice(0, MAX_SCAN_CHARS) : '';
  const alternatives = labels
    .map((l) => l.split(/[\s_-]+/).map(escapeRegExp).join('[ \\t_-]{0,3}'))
    .join('|');
  // Bounded, non-overlapping quantifiers: a runaway line of '*' or spaces cannot make this backtrack badly.
  const re = new RegExp(`(?:^|\\n)[ \\t>#*\\d.-]{0,12}(${alternatives})[ \\t*]{0,6}[:=][ \\t*]{0,6}`, 'gi');
  const hits: Array<{ key: string; start: number; end: number }> = [];
  for (let m = re.exec(src); m; m = re.exec(src)) {
    hits.push({ key: normalizeKey(m[1]), start: m.index, end: m.index + m[0].length });
    if (m[0].length === 0) re.lastIndex++;
  }
  const out: Record<string, string> = {};
  hits.forEach((h, i) => {
    const value = src.slice(h.end, i + 1 < hits.length ? hits[i + 1].start : src.length).trim();
    if (!(h.key in out) && value) out[h.key] = value.replace(/^["'`]+|["'`]+$/g, '').trim();
  });
  return out;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---------------------------------------------------------------------------------------------- planner

export interface PlannerAction {
  justification: string;
  context: string;
  subGoal: string;
  toolName: string;
}

export type PlannerParse =
  | { ok: true; action: PlannerAction; method: ParseMethod }
  | { ok: false; error: string; method: 'default' };

const SUBGOAL_KEYS = ['sub_goal', 'subgoal', 'sub goal', 'goal'];
const TOOL_KEYS = ['tool_name', 'tool', 'toolname', 'selected_tool', 'tool name'];
const JUSTIFICATION_KEYS = ['justification', 'reason', 'reasoning', 'rationale'];

/** The planner's next action. `toolNames` lets a reply that names no tool in a field still be used when it mentions exactly one. */
export function parsePlannerOutput(text: string, toolNames: string[] = []): PlannerParse {
  // A JSON object with only one of the two fields still contributes it.
  let partialGoal = '';
  let partialTool = '';
  for (const obj of extractJsonObjects(text)) {
    const subGoal = asText(pick(obj, SUBGOAL_KEYS));
    const toolName = asText(pick(obj, TOOL_KEYS));
    const justification = asText(pick(obj, JUSTIFICATION_KEYS));
    const context = asText(pick(obj, ['context']));
    if (subGoal && toolName) return { ok: true, method: 'json', action: { justification, context, subGoal, toolName } };
    partialGoal ||= subGoal;
    partialTool ||= toolName;
  }
  const f = extractFields(text, ['justification', 'context', 'sub-goal', 'subgoal', 'tool name', 'tool', 'selected tool']);
  const subGoal = f['subgoal'] ? firstParagraph(f['subgoal']) : partialGoal;
  let toolName = firstLine(f['toolname'] ?? f['tool'] ?? f['selectedtool'] ?? '') || partialTool;
  if (subGoal && !toolName) toolName = mentionedTool(text, toolNames) ?? '';
  if (subGoal && toolName) {
    return {
      ok: true,
      method: 'fields',
      action: { justification: f['justification'] ?? '', context: f['context'] ?? '', subGoal, toolName },
    };
  }
  const missing = [subGoal ? null : 'sub_goal', toolName ? null : 'tool_name'].filter(Boolean).join(' and ');
  return { ok: false, method: 'default', error: `planner output has no usable ${missing}` };
}

/** What a planner reply still being written says so far (any field may be empty): for showing, not for acting on. */
export interface PlannerDraft {
  justification: string;
  subGoal: string;
  toolName: string;
}

/** The fields of a planner reply as far as it has streamed: JSON first (a cut-off object is repaired), then labelled fields. */
export function plannerDraft(text: string): PlannerDraft {
  const d: PlannerDraft = { justification: '', subGoal: '', toolName: '' };
  for (const obj of extractJsonObjects(text)) {
    d.subGoal ||= asText(pick(obj, SUBGOAL_KEYS));
    d.toolName ||= asText(pick(obj, TOOL_KEYS));
    d.justification ||= asText(pick(obj, JUSTIFICATION_KEYS));
  }
  if (d.subGoal || d.toolName || d.justification) return d;
  const f = extractFields(text, ['justification', 'context', 'sub-goal', 'subgoal', 'tool name', 'tool', 'selected tool']);
  return {
    justification: f['justification'] ?? '',
    subGoal: f['subgoal'] ? firstParagraph(f['subgoal']) : '',
    toolName: firstLine(f['toolname'] ?? f['tool'] ?? f['selectedtool'] ?? ''),
  };
}

function firstLine(s: string): string {
  return s.split('\n')[0].replace(/[*`"']/g, '').trim();
}

function firstParagraph(s: string): string {
  return s.split(/\n\s*\n/)[0].trim();
}

/** The one registered tool name that appears in `text`, or null if none or several do. */
function mentionedTool(text: string, toolNames: string[]): string | null {
  const t = String(text).toLowerCase();
  const found = toolNames.filter((n) => t.includes(n.toLowerCase()));
  return found.length === 1 ? found[0] : null;
}

// ------------------------------------------------------------------------------------------ tool names

function canonicalToolName(name: string): string {
  return normalizeKey(name).replace(/tool$/, '');
}

/** Edit distance counting an adjacent transposition as one edit (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 0; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * The registered tool a model meant: exact, then case/punctuation/"_Tool"-insensitive, then a unique
 * containment, then the unique closest within a small edit distance. Null when none is a clear match.
 */
export function matchToolName(name: string, registered: string[]): { name: string; exact: boolean } | null {
  if (typeof name !== 'string' || !name.trim()) return null;
  if (registered.includes(name)) return { name, exact: true };
  const want = canonicalToolName(name.slice(0, 200));
  if (!want) return null;
  const canon = registered.map((r) => ({ r, c: canonicalToolName(r) }));
  const same = canon.filter((x) => x.c === want);
  if (same.length === 1) return { name: same[0].r, exact: false };
  const contains = canon.filter((x) => x.c.length >= 3 && want.length >= 3 && (x.c.includes(want) || want.includes(x.c)));
  if (contains.length === 1) return { name: contains[0].r, exact: false };
  const scored = canon
    .map((x) => ({ r: x.r, d: editDistance(want, x.c), limit: Math.max(1, Math.floor(Math.max(want.length, x.c.length) / 4)) }))
    .filter((x) => x.d <= x.limit)
    .sort((a, b) => a.d - b.d);
  if (scored.length === 1 || (scored.length > 1 && scored[0].d < scored[1].d)) return { name: scored[0].r, exact: false };
  return null;
}

// ------------------------------------------------------------------------------------------ executor

export type ToolArgsParse =
  | { ok: true; args: Record<string, unknown>; method: ParseMethod; dropped: string[] }
  | { ok: false; error: string; method: ParseMethod };

/**
 * The executor's tool arguments from its reply (a JSON object, `name: value` fields, or a fenced block for a
 * tool with one string argument), checked by the tools' own validateArgs: the same rules as the registry.
 */
export function parseToolArgs(text: string, card: ToolCard): ToolArgsParse {
  const props = Object.keys(card.input.properties);
  let firstError: string | null = null;
  for (const obj of extractJsonObjects(text)) {
    const inner = pick(obj, ['args', 'arguments', 'parameters', 'input', 'tool_input']);
    const raw = inner && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : obj;
    const checked = checkArgs(raw, card);
    if (checked.ok) return { ...checked, method: 'json' };
    firstError ??= checked.error;
  }
  const fields = extractFields(text, props);
  if (Object.keys(fields).length > 0) {
    const checked = checkArgs(fields, card);
    if (checked.ok) return { ...checked, method: 'fields' };
    firstError ??= checked.error;
  }
  // One required string argument and a fenced block (e.g. Python code): use the block.
  const required = card.input.required;
  if (required.length === 1 && card.input.properties[required[0]]?.type === 'string') {
    const block = fencedBlocks(String(text).slice(0, MAX_SCAN_CHARS)).find((f) => f.lang.toLowerCase() !== 'json' && f.body.trim());
    if (block) return { ok: true, args: { [required[0]]: block.body.trim() }, method: 'default', dropped: [] };
  }
  return { ok: false, method: 'default', error: firstError ?? `no arguments for ${card.name} found in the executor output` };
}

function checkArgs(
  raw: Record<string, unknown>,
  card: ToolCard,
): { ok: true; args: Record<string, unknown>; dropped: string[] } | { ok: false; error: string } {
  const v = validateArgs(card, raw);
  return v.ok ? { ok: true, args: v.args, dropped: v.ignored } : v;
}

// ------------------------------------------------------------------------------------------ verifier

export type Verdict = 'STOP' | 'CONTINUE';

const VERDICT_KEYS = ['verdict', 'decision', 'conclusion', 'status', 'action'];
const EXPLANATION_KEYS = ['explanation', 'reason', 'analysis', 'justification'];

/** STOP or CONTINUE; CONTINUE by default, which the turn budget bounds. */
export function parseVerdict(text: string): { verdict: Verdict; method: ParseMethod; explanation: string } {
  for (const obj of extractJsonObjects(text)) {
    const v = asText(pick(obj, VERDICT_KEYS)).toUpperCase();
    const explanation = asText(pick(obj, EXPLANATION_KEYS));
    if (/\bSTOP\b/.test(v)) return { verdict: 'STOP', method: 'json', explanation };
    if (/\bCONTINUE\b/.test(v)) return { verdict: 'CONTINUE', method: 'json', explanation };
  }
  const src = String(text).slice(0, MAX_SCAN_CHARS);
  // The last verdict word wins: models often discuss both before deciding.
  const re = /\b(STOP|CONTINUE)\b/gi;
  let last: string | null = null;
  for (let m = re.exec(src); m; m = re.exec(src)) last = m[1].toUpperCase();
  if (last) return { verdict: last as Verdict, method: 'fields', explanation: src.trim().slice(0, 500) };
  return { verdict: 'CONTINUE', method: 'default', explanation: '' };
}

/** A verifier's JSON reply as far as it has streamed: its verdict once written (else null), its explanation so far. For showing only. */
export function verdictDraft(text: string): { verdict: Verdict | null; explanation: string } {
  let explanation = '';
  for (const obj of extractJsonObjects(text)) {
    const v = asText(pick(obj, VERDICT_KEYS)).toUpperCase();
    explanation ||= asText(pick(obj, EXPLANATION_KEYS));
    const verdict = /\bSTOP\b/.test(v) ? 'STOP' : /\bCONTINUE\b/.test(v) ? 'CONTINUE' : null;
    if (verdict) return { verdict, explanation };
  }
  return { verdict: null, explanation };
}

// ------------------------------------------------------------------------------------------ answers

/** The text inside the last <answer>...</answer> (an unclosed final tag runs to the end), or null. */
export function extractAnswerTag(text: string): string | null {
  const src = String(text).slice(-MAX_SCAN_CHARS);
  const closed = [...src.matchAll(/<answer>([\s\S]*?)<\/answer>/gi)];
  if (closed.length) return closed[closed.length - 1][1].trim();
  const open = src.toLowerCase().lastIndexOf('<answer>');
  if (open >= 0) return src.slice(open + '<answer>'.length).trim();
  return null;
}

/** A judge's yes/no, or null when the reply says neither clearly. */
export function parseYesNo(text: string): boolean | null {
  for (const obj of extractJsonObjects(text)) {
    const v = pick(obj, ['answer', 'verdict', 'correct', 'equivalent', 'judgement', 'judgment', 'result']);
    if (typeof v === 'boolean') return v;
    const b = yesNoWord(asText(v));
    if (b !== null) return b;
  }
  const src = String(text).slice(0, MAX_SCAN_CHARS);
  const first = yesNoWord(src.trim().split(/\s+/)[0] ?? '');
  if (first !== null) return first;
  const yes = /\b(yes|correct|equivalent)\b/i.test(src);
  const no = /\b(no|not|incorrect|wrong)\b/i.test(src);
  if (yes !== no) return yes;
  return null;
}

function yesNoWord(w: string): boolean | null {
  const t = w.toLowerCase().replace(/[^a-z]/g, '');
  if (t === 'yes' || t === 'true' || t === 'correct') return true;
  if (t === 'no' || t === 'false' || t === 'incorrect') return false;
  return null;
}
