// An experiment run's results as the Experiments tab shows them: the progress of the run in progress, a run's
// summary and items, and two runs compared item by item (the items whose outcome differs marked).
import { html, nothing } from 'lit';
import { describeScore, type ScoreRule } from '../agent/rewards';
import { compareRuns, describeComparison } from '../controllers/experiments/experiment-compare';
import type { RunProgress } from '../controllers/experiments/experiment-runs';
import { summarize } from '../controllers/experiments/experiment-store';
import type { ExperimentItemRecord, ExperimentRecord } from '../store/records';
import { barChart } from './charts';
import { moduleLabel } from './chat-view';

export function renderRunProgress(p: RunProgress) {
  const at = p.at;
  const where = at
    ? `Item ${at.item} of ${at.total} (#${at.number}${at.pid !== String(at.number) ? `, ${at.pid}` : ''}), ${at.turn ? `turn ${at.turn}: ` : ''}${moduleLabel(at.module)}…`
    : `Starting: 0 of ${p.total} items done`;
  return html`<div role="status" data-testid="experiment-progress">
    <span class="where">${where}</span>
    <progress max=${p.total} .value=${p.done} aria-label="Items done" aria-valuetext=${`${p.done} of ${p.total} items done`}></progress>
  </div>`;
}

/** An item's Correct cell: yes, no, or — when it was not scored. */
function correctCell(it: ExperimentItemRecord) {
  return it.correct === undefined ? '—' : it.correct ? html`<span class="yes">yes</span>` : html`<span class="no">no</span>`;
}

/** A reference stored as JSON (a number, a list) shows as its value; a plain string as itself. */
function expected(reference: string): string {
  try {
    const v: unknown = JSON.parse(reference);
    return typeof v === 'string' ? v : v === null ? '—' : reference;
  } catch {
    return reference;
  }
}

/** A run's heading, scripted label, accuracy line and tool-call chart. */
function renderSummary(title: string, items: ExperimentItemRecord[], scripted: boolean) {
  const s = summarize(items);
  const tools = Object.entries(s)
    .filter(([k]) => k.startsWith('tool:'))
    .map(([k, v]) => ({ label: k.slice(5), value: v as number }));
  return html`<div data-testid="run-summary">
    <h4>${title}</h4>
    ${scripted ? html`<p class="scripted" data-testid="scripted-label">Scripted demo: no model wrote these answers.</p>` : nothing}
    <p>Accuracy ${s.correct}/${s.items} (${Math.round(100 * s.accuracy)}%), ${s.toolCalls} tool calls, ${s.errors} errors.</p>
    <div class="charts">${barChart('Tool calls', tools)}</div>
  </div>`;
}

/**
 * Two runs: their summaries side by side, then one table matched item by item (A is the run whose results
 * were open, B the one compared with it), the items whose outcome differs marked.
 */
export function renderComparison(a: ExperimentRecord, aItems: ExperimentItemRecord[], b: ExperimentRecord, bItems: ExperimentItemRecord[], showTrajectory: (conversationId: string) => void) {
  const { rows, counts, repeated } = compareRuns(aItems, bItems);
  const verdict = (it: ExperimentItemRecord | null) => (it ? correctCell(it) : html`<span title="not in this run">—</span>`);
  const open = (run: string, it: ExperimentItemRecord | null, label: string) =>
    it?.conversationId ? html`<button type="button" aria-label=${`Open run ${run}'s trajectory of item ${label}`} @click=${() => showTrajectory(it.conversationId!)}>${run}</button>` : nothing;
  return html`<div data-testid="comparison">
    <div class="compare-summaries">${renderSummary(`A: ${a.name}`, aItems, !!a.config.scripted)} ${renderSummary(`B: ${b.name}`, bItems, !!b.config.scripted)}</div>
    <p data-testid="compare-counts">${describeComparison(counts, repeated)}</p>
    <div class="table-scroll" role="region" aria-label="Runs A and B item by item" tabindex="0">
      <table data-testid="compare-items">
        <thead><tr><th scope="col">#</th><th scope="col">Question</th><th scope="col">Expected</th><th scope="col">A: given</th><th scope="col">A</th><th scope="col">B: given</th><th scope="col">B</th><th scope="col">Trajectories</th></tr></thead>
        <tbody>
          ${rows.map(
            (r) => html`<tr class=${r.change === 'right-in-a' || r.change === 'right-in-b' ? 'changed' : ''} data-change=${r.change}>
              <td>${r.label}</td>
              <td class="ans">${r.query}</td>
              <td class="ans">${expected(r.reference)}</td>
              <td class="ans">${r.a ? (r.a.answer ?? '—') : '—'}</td>
              <td>${verdict(r.a)}</td>
              <td class="ans">${r.b ? (r.b.answer ?? '—') : '—'}</td>
              <td>${verdict(r.b)}</td>
              <td>${open('A', r.a, r.label)} ${open('B', r.b, r.label)}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </div>`;
}

export function renderItems(title: string, items: ExperimentItemRecord[], scripted: boolean, showTrajectory: (conversationId: string) => void) {
  return html`<div>
    ${renderSummary(title, items, scripted)}
    <div class="table-scroll" role="region" aria-label=${`Items of ${title}`} tabindex="0">
    <table data-testid="items">
      <thead><tr><th scope="col">#</th><th scope="col">Question</th><th scope="col">Expected</th><th scope="col">Given</th><th scope="col">Correct</th><th scope="col">Scored by</th><th scope="col">Tools</th><th scope="col">Errors</th><th scope="col">Trajectory</th></tr></thead>
      <tbody>
        ${items.map(
          (it) => html`<tr>
            <td title=${`id ${it.pid}`}>${it.number ?? it.pid}</td>
            <td class="ans">${it.query}</td>
            <td class="ans">${expected(it.reference)}</td>
            <td class="ans">${it.answer ?? '—'}</td>
            <td>${correctCell(it)}</td>
            <td>${it.scoring ? describeScore({ rule: it.scoring.rule as ScoreRule, compared: it.scoring.compared }) : '—'}</td>
            <td>${Object.entries(it.toolCalls ?? {}).map(([k, v]) => `${k}×${v}`).join(', ') || '—'}</td>
            <td>${it.errors?.length ?? 0}</td>
            <td>${it.conversationId ? html`<button type="button" @click=${() => showTrajectory(it.conversationId!)}>Open</button>` : '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    </div>
  </div>`;
}
