// What the chat shows about a run while it waits, in words: each module call timed as the user sees it (time
// to the first token, tokens per second, elapsed) and a one-line preview of what it streams. Pure functions;
// the clocks themselves are controllers/conversation/module-calls.ts.
import type { ModuleName } from '../agent/prompts';
import { extractJsonObjects, plannerDraft, verdictDraft } from '../agent/parse';
import { streamedRate, type CallClock, type CallStat } from '../controllers/conversation/module-calls';

export function moduleLabel(m: ModuleName): string {
  return { analysis: 'Analysing the query', planner: 'Planning', executor: 'Calling a tool', verifier: 'Checking', generator: 'Answering' }[m];
}

/**
 * The live line's heading: "Planning (turn 1)…", or with what the running tool says it is doing,
 * "Calling a tool (turn 1): starting Python (first use)…".
 */
export function liveHeading(module: ModuleName | null, turn: number, toolNote: string | null = null, resuming = false): string {
  // A resumed run says where it picks up until its first call ends ("Starting…" read as a fresh run).
  if (!module) return resuming ? 'Resuming…' : 'Starting…';
  if (resuming) return `Resuming at ${turn ? `turn ${turn}` : 'the start'}: ${moduleLabel(module).toLowerCase()}…`;
  return `${moduleLabel(module)}${turn ? ` (turn ${turn})` : ''}${toolNote ? `: ${oneLine(toolNote, 80)}` : ''}…`;
}

// Line breaks, other control characters and bidirectional overrides: model text may not reshape the line.
const UNPRINTABLE = /[\s\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g;

/** `s` on one line, cut to `max` characters with an ellipsis. */
export function oneLine(s: string, max: number): string {
  const flat = s.replace(UNPRINTABLE, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, endBeforePair(flat, max - 1)).trimEnd()}…`;
}

// Lengths count UTF-16 units: a cut between a surrogate pair's halves would show the half left as U+FFFD,
// so an end moves before the pair and a start after it.
const isHigh = (s: string, i: number) => /[\uD800-\uDBFF]/.test(s.charAt(i));
const isLow = (s: string, i: number) => /[\uDC00-\uDFFF]/.test(s.charAt(i));
const endBeforePair = (s: string, at: number) => (at > 0 && isHigh(s, at - 1) && isLow(s, at) ? at - 1 : at);
const startAfterPair = (s: string, at: number) => (at > 0 && isHigh(s, at - 1) && isLow(s, at) ? at + 1 : at);

const PREVIEW_CHARS = 120;

/**
 * What the live line shows of the executor's streamed output (model text, so hostile): the tool and its
 * arguments on one short line as far as they parse (a cut-off object is repaired), e.g. "python: code =
 * print(2 + 2)", else how much has been written so far. Rendered as text, never as HTML.
 */
export function executorPreview(text: string, toolName: string | null): string {
  const tool = toolName ? `${oneLine(toolName, 40)}: ` : '';
  const obj = extractJsonObjects(text)[0];
  if (!obj) return `${tool}${writing('the arguments', text)}`;
  const inner = ['args', 'arguments', 'parameters', 'input', 'tool_input'].map((k) => obj[k]).find((v) => v && typeof v === 'object' && !Array.isArray(v));
  const args = (inner ?? obj) as Record<string, unknown>;
  const summary = Object.entries(args)
    .map(([k, v]) => `${k} = ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
  return oneLine(`${tool}${summary || '(no arguments)'}`, PREVIEW_CHARS);
}

/** A reply that has begun a JSON object or a code fence: until a field parses, say how much is written. */
const STARTS_STRUCTURED = /^\s*(\{|`)/;

/** "writing the plan (12 characters)": a module's reply before anything in it can be shown. */
function writing(what: string, text: string): string {
  return `writing ${what} (${text.length} character${text.length === 1 ? '' : 's'})`;
}

/** The last `max` characters of `s` on one line, with a leading ellipsis when cut: streaming text's newest part. */
export function tailLine(s: string, max: number): string {
  const flat = s.replace(UNPRINTABLE, ' ').trim();
  return flat.length <= max ? flat : `…${flat.slice(startAfterPair(flat, flat.length - max + 1)).trimStart()}`;
}

/**
 * What the live line shows of the planner's streamed reply: the tool and sub-goal it has chosen so far
 * ("tool: python · sub-goal: Compute 6*7"), before them the newest part of its reasoning, before that how
 * much of the object is written, and for prose, its newest part. One line, as text.
 */
export function plannerPreview(text: string): string {
  // A key cut mid-name ('…"j", "con') spoils the repair of the whole object: then what came before its
  // comma shows, so the line does not flick back to "writing the plan" between fields.
  const full = plannerDraft(text);
  const comma = text.lastIndexOf(',');
  const d = full.toolName || full.subGoal || full.justification || comma < 0 ? full : plannerDraft(text.slice(0, comma));
  if (d.toolName || d.subGoal) return oneLine(`tool: ${d.toolName || '…'} · sub-goal: ${d.subGoal || '…'}`, PREVIEW_CHARS);
  if (d.justification) return `reasoning: ${tailLine(d.justification, PREVIEW_CHARS - 11)}`;
  if (STARTS_STRUCTURED.test(text)) return writing('the plan', text);
  return tailLine(text, PREVIEW_CHARS);
}

/**
 * The verifier's streamed reply: its verdict once written, with the explanation ("STOP: the tool answered"),
 * before it the explanation so far, before that how much is written; prose shows its newest part.
 */
export function verifierPreview(text: string): string {
  const d = verdictDraft(text);
  if (d.verdict) return oneLine(`${d.verdict}${d.explanation ? `: ${d.explanation}` : ''}`, PREVIEW_CHARS);
  if (d.explanation) return `weighing: ${tailLine(d.explanation, PREVIEW_CHARS - 10)}`;
  if (STARTS_STRUCTURED.test(text)) return writing('the verdict', text);
  return tailLine(text, PREVIEW_CHARS);
}

/** What the live line shows under its heading for `module`'s streamed `text` (the generator's goes to the answer). */
export function livePreview(module: ModuleName | null, text: string, toolName: string | null): string {
  switch (module) {
    case 'generator':
      return '';
    case 'executor':
      return executorPreview(text, toolName);
    case 'planner':
      return plannerPreview(text);
    case 'verifier':
      return verifierPreview(text);
    default:
      return tailLine(text, ANALYSIS_CHARS);
  }
}

/** The analysis is prose the user may like to follow: more of it shows. */
const ANALYSIS_CHARS = 400;

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const count = (n: number) => n.toLocaleString('en-US');
const rate = (r: number) => `${r < 10 ? r.toFixed(1) : Math.round(r)} tokens/s`;

/** The call in progress: "2.4 s · waiting for the first token", or its first-token time and rate so far. */
export function formatLiveCall(c: CallClock, now: number): string {
  const elapsed = secs(Math.max(0, now - c.startedAt));
  // A long prompt is read before the first token (the planner's grows each turn): its size says why the wait.
  if (c.firstTokenAt === null) return `${elapsed} · waiting for the first token${c.promptTokens ? ` (reading a prompt of ${count(c.promptTokens)} tokens)` : ''}`;
  const r = streamedRate(c);
  return `${elapsed} · first token after ${secs(c.firstTokenAt - c.startedAt)} · ${c.pieces} token${c.pieces === 1 ? '' : 's'}${r === null ? '' : `, ${rate(r)}`}`;
}

/** A finished call, one line: "Planning (turn 1): 3.1 s, first token after 1.2 s, 42 tokens at 21 tokens/s". */
export function formatCall(s: CallStat): string {
  const head = `${moduleLabel(s.module)}${s.turn ? ` (turn ${s.turn})` : ''}: ${secs(s.ms)}`;
  const prompt = s.promptTokens ? `, prompt ${count(s.promptTokens)} tokens${s.cachedPromptTokens ? ` (${count(s.cachedPromptTokens)} reused)` : ''}` : '';
  const end = `${prompt}${s.outcome === 'unusable' ? ' — its reply could not be used' : s.outcome === 'failed' ? ' — failed' : ''}`;
  if (s.firstTokenMs === null && !s.exact) return `${head}, no tokens streamed${end}`;
  const first = s.firstTokenMs === null ? '' : `, first token after ${secs(s.firstTokenMs)}`;
  const n = `${s.exact ? '' : '≈'}${s.tokens} token${s.tokens === 1 ? '' : 's'}`;
  return `${head}${first}, ${n}${s.tokensPerSecond === null ? '' : ` at ${rate(s.tokensPerSecond)}`}${end}`;
}
