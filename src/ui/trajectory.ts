// A conversation's trajectory rebuilt from its stored steps: the query analysis, then per turn the
// planner's sub-goal and tool, the executor's arguments and result, the verifier's verdict, with timings.
// Everything here came from a model or a tool, so it is rendered as text only.
import { html, nothing, type TemplateResult } from 'lit';
import type { StepOf, StepRecord } from '../store/records';

export interface TurnView {
  turn: number;
  subGoal?: string;
  tool?: string;
  args?: unknown;
  result?: string;
  ok?: boolean;
  verdict?: string;
  explanation?: string;
  errors: string[];
  /**
   * What a module wrote when its reply could not be used, so the error can be checked against it ('planner
   * output has no usable sub_goal and tool_name' says nothing of what the planner did write).
   */
  unusable: { module: string; raw: string; length: number }[];
  ms: number;
}

export interface Trajectory {
  analysis?: string;
  turns: TurnView[];
  answer?: string;
  totalMs: number;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : v === undefined || v === null ? undefined : String(v);
}

/** Groups stored steps by turn (turn 0 is the analysis, the generator closes the run). */
export function trajectoryFromSteps(steps: StepRecord[]): Trajectory {
  const t: Trajectory = { turns: [], totalMs: 0 };
  const byTurn = new Map<number, TurnView>();
  const turnOf = (n: number) => {
    let v = byTurn.get(n);
    if (!v) {
      v = { turn: n, errors: [], unusable: [], ms: 0 };
      byTurn.set(n, v);
    }
    return v;
  };
  // Records are typed by kind, but ones stored by older versions may lack fields: every read allows that.
  for (const s of [...steps].sort((a, b) => a.seq - b.seq)) {
    const ms = Math.max(0, s.endedAt - s.startedAt);
    t.totalMs += ms;
    if (s.kind === 'analysis') {
      t.analysis = str(s.data.text);
      continue;
    }
    if (s.kind === 'generator') {
      t.answer = str(s.data.finalAnswer) ?? str(s.data.text);
      continue;
    }
    if (s.kind === 'error' && s.turn === 0) {
      noteError(t.turns.length ? t.turns[0] : turnOf(0), s.data);
      continue;
    }
    const v = turnOf(s.turn);
    v.ms += ms;
    if (s.kind === 'planner') {
      v.subGoal = str(s.data.action?.subGoal);
      v.tool = str(s.data.resolvedTool) ?? str(s.data.action?.toolName);
    } else if (s.kind === 'executor') {
      const d = s.data;
      v.subGoal ??= str(d.subGoal);
      v.tool = str(d.toolName) ?? v.tool;
      v.args = d.args;
      v.result = str(d.result);
      v.ok = d.ok === true;
      if (d.error) v.errors.push(String(d.error));
    } else if (s.kind === 'verifier') {
      v.verdict = str(s.data.verdict);
      v.explanation = str(s.data.explanation);
    } else if (s.kind === 'error') {
      noteError(v, s.data);
    }
  }
  t.turns = [...byTurn.values()].sort((a, b) => a.turn - b.turn);
  return t;
}

function noteError(v: TurnView, d: StepOf<'error'>['data']): void {
  const module = str(d.module) ?? 'module';
  v.errors.push(`${module}: ${str(d.message) ?? 'failed'}`);
  const raw = str(d.raw);
  if (raw !== undefined) v.unusable.push({ module, raw: raw.slice(0, RAW_SHOWN), length: raw.length });
}

/** A reply is at most a few thousand characters (maxNewTokens), but a stored record is not bounded by that. */
export const RAW_SHOWN = 4000;

export { toolUsage } from '../agent/experiment-file';

const secs = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

function argsText(a: unknown): string {
  if (a === undefined || a === null) return '(none)';
  try {
    return JSON.stringify(a, null, 1);
  } catch {
    return String(a);
  }
}

// Behind a disclosure: the reply is long, and only wanted when its error is. Shown as text, like all model output.
function unusableReply(u: TurnView['unusable'][number]): TemplateResult {
  const cut = u.length > u.raw.length ? html`<p class="ms">(its first ${u.raw.length} of ${u.length} characters)</p>` : nothing;
  return html`<details class="unusable-reply"><summary>What the ${u.module} wrote</summary>${u.raw.trim() ? html`<pre>${u.raw}</pre>${cut}` : html`<p>(nothing: the reply was empty)</p>`}</details>`;
}

export function renderTrajectory(t: Trajectory): TemplateResult {
  return html`<div class="trajectory" part="trajectory">
    ${t.analysis ? html`<p class="analysis"><strong>Analysis:</strong> ${t.analysis}</p>` : nothing}
    <ol class="turns">
      ${t.turns.map(
        (v) => html`<li class="turn" data-turn=${v.turn}>
          <dl>
            <dt>Turn</dt><dd>${v.turn} <span class="ms">(${secs(v.ms)})</span></dd>
            ${v.subGoal !== undefined ? html`<dt>Sub-goal</dt><dd>${v.subGoal}</dd>` : nothing}
            ${v.tool !== undefined ? html`<dt>Tool</dt><dd><code>${v.tool}</code></dd>` : nothing}
            ${v.args !== undefined ? html`<dt>Arguments</dt><dd><pre>${argsText(v.args)}</pre></dd>` : nothing}
            ${v.result !== undefined ? html`<dt>Result</dt><dd><pre class=${v.ok ? 'ok' : 'bad'}>${v.result || '(empty)'}</pre></dd>` : nothing}
            ${v.verdict ? html`<dt>Verdict</dt><dd>${v.verdict}${v.explanation ? html` — ${v.explanation}` : nothing}</dd>` : nothing}
            ${v.errors.length
              ? html`<dt>Errors</dt><dd class="bad">${v.errors.map((e) => html`<div>${e}</div>`)}${v.unusable.map(unusableReply)}</dd>`
              : nothing}
          </dl>
        </li>`,
      )}
    </ol>
    <p class="total">Total ${secs(t.totalMs)}</p>
  </div>`;
}
