// What the chat shows about a run while it waits: each module call timed as the user sees it (time to the
// first token, tokens per second, elapsed), and which stored conversations are the user's own questions
// rather than an experiment's items or a training run's rollouts. Pure functions; the element renders them.
import type { ModuleName } from '../agent/prompts';
import { nextModule, stateFromSteps } from '../agent/phases';
import { extractJsonObjects, plannerDraft, verdictDraft } from '../agent/parse';
import type { CallUsage, ConversationRecord, StepRecord } from '../store/records';

/** One module call in progress, in performance.now() milliseconds. */
export interface CallClock {
  startedAt: number;
  firstTokenAt: number | null;
  lastTokenAt: number | null;
  /** Streamed pieces so far (web-llm and the planner stream about one token a piece). */
  pieces: number;
  /** The prompt's length in tokens, where the engine can count it: reading it is the wait before the first token. */
  promptTokens?: number;
}

export interface CallStat {
  module: ModuleName;
  turn: number;
  ms: number;
  firstTokenMs: number | null;
  tokens: number;
  /** True when the engine counted the tokens; false when they are the streamed pieces (about one a token). */
  exact: boolean;
  tokensPerSecond: number | null;
  /** The prompt's tokens and how many of them the engine reused from its cache, where it reported them. */
  promptTokens?: number;
  cachedPromptTokens?: number;
  /** How a call ended that left no step of its own kind: its reply could not be used, or the engine failed. */
  outcome?: 'unusable' | 'failed';
}

/**
 * The module call a stored step ends, or null for none. An error step ends one too: a planner reply that
 * could not be used is stored as an error, and leaving those out hid every call of a planner that had not
 * yet learnt the reply format (issue 28: never listed, even at turn 5).
 */
export function callOfStep(step: StepRecord): { module: ModuleName; outcome?: CallStat['outcome'] } | null {
  if (step.kind !== 'error') return { module: step.kind };
  const m = step.data.module;
  if (!['analysis', 'planner', 'executor', 'verifier', 'generator'].includes(m)) return null;
  return { module: m, outcome: step.data.errorKind === 'unusable-output' ? 'unusable' : 'failed' };
}

export function startCall(now: number): CallClock {
  return { startedAt: now, firstTokenAt: null, lastTokenAt: null, pieces: 0 };
}

export function tokenArrived(c: CallClock, now: number): CallClock {
  return { ...c, firstTokenAt: c.firstTokenAt ?? now, lastTokenAt: now, pieces: c.pieces + 1 };
}

function streamedRate(c: CallClock): number | null {
  if (c.firstTokenAt === null || c.lastTokenAt === null || c.pieces < 2 || c.lastTokenAt <= c.firstTokenAt) return null;
  return (c.pieces - 1) / ((c.lastTokenAt - c.firstTokenAt) / 1000);
}

/**
 * A finished call: its stored step's token count and decode time when the engine reported them (the
 * planner does), else what streamed. The executor's time includes running its tool.
 */
export function callStat(module: ModuleName, turn: number, c: CallClock, now: number, step?: StepRecord, outcome?: CallStat['outcome']): CallStat {
  const d: CallUsage = step?.data ?? {};
  const counted = typeof d.completionTokenCount === 'number' && d.completionTokenCount > 0 ? d.completionTokenCount : null;
  const decodeMs = d.timings?.decodeMs;
  const rate = counted !== null && typeof decodeMs === 'number' && decodeMs > 0 ? counted / (decodeMs / 1000) : streamedRate(c);
  return {
    module,
    turn,
    ms: Math.max(0, now - c.startedAt),
    firstTokenMs: c.firstTokenAt === null ? null : c.firstTokenAt - c.startedAt,
    tokens: counted ?? c.pieces,
    exact: counted !== null,
    tokensPerSecond: rate,
    ...(typeof d.promptTokenCount === 'number' && d.promptTokenCount > 0 ? { promptTokens: d.promptTokenCount } : {}),
    ...(typeof d.timings?.cachedPromptTokens === 'number' && d.timings.cachedPromptTokens > 0 ? { cachedPromptTokens: d.timings.cachedPromptTokens } : {}),
    ...(outcome ? { outcome } : {}),
  };
}

/**
 * The module call that follows `step`, and its turn (null after the answer): said before its first token.
 * With the run's `maxTurns`, the last turn's tool call is followed by the answer: the loop asks no verifier
 * whose verdict could change nothing.
 */
export function nextCall(step: StepRecord, maxTurns = Infinity): { module: ModuleName; turn: number } | null {
  if (step.kind === 'executor' && step.turn >= maxTurns) return { module: 'generator', turn: step.turn };
  const module = nextModule(step);
  if (!module) return null;
  // The analysis opens turn 1; a verifier's CONTINUE opens the next turn.
  const turn = step.kind === 'analysis' ? 1 : step.kind === 'verifier' && module === 'planner' ? step.turn + 1 : step.turn;
  return { module, turn };
}

/**
 * The module call a run makes next after its stored `steps`, by the loop's own rules (agent/phases.ts), and
 * its turn; null once answered. Unlike nextCall it follows failed calls too (an unusable plan goes on to the
 * next turn's planner), and it says where a resumed run picks up.
 */
export function upcomingCall(steps: StepRecord[], maxTurns = Infinity): { module: ModuleName; turn: number } | null {
  const s = stateFromSteps(steps);
  switch (s.phase) {
    case 'analysis':
      return { module: 'analysis', turn: 0 };
    case 'plan':
      return s.turn > maxTurns ? { module: 'generator', turn: Math.min(s.turn, maxTurns) } : { module: 'planner', turn: s.turn };
    case 'execute':
      return { module: 'executor', turn: s.turn };
    case 'verify':
      return s.turn >= maxTurns ? { module: 'generator', turn: s.turn } : { module: 'verifier', turn: s.turn };
    case 'generate':
      return { module: 'generator', turn: Math.min(s.turn, maxTurns) };
    default:
      return null;
  }
}

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

export type ConversationGroup = 'chat' | 'experiment' | 'training';

/**
 * Where a stored conversation came from: a training rollout (settings.training / rollouts), an experiment's
 * item (settings.experiment, or, stored before that was recorded, a reference answer: chat questions have
 * none), or the user's own question.
 */
export function conversationGroup(c: ConversationRecord): ConversationGroup {
  const s = c.settings ?? {};
  if (s.training === true || (s.rollouts !== null && s.rollouts !== undefined)) return 'training';
  if (s.experiment !== undefined || c.reference !== undefined) return 'experiment';
  return 'chat';
}
