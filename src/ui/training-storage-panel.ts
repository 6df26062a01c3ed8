// <agentflow-training-storage>: what training keeps in this browser (checkpoint adapters and optimizer
// moments per run, adapters kept by name or imported) and a button that frees what finished runs no longer
// need (StoredTraining reads and frees it). Shown in Models & GPU next to the model cache.
import { LitElement, css, html, nothing } from 'lit';
import { formatBytes } from '../controllers/progress-tracker';
import { StoredTraining } from '../controllers/training/stored-training';

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

export class AgentflowTrainingStorage extends LitElement {
  static override properties = {
    dbName: { type: String, attribute: 'db-name' },
  };
  declare dbName: string | undefined;
  private readonly stored = new StoredTraining(this, () => this.dbName);

  static override styles = css`
    :host { display: block; }
    table { border-collapse: collapse; }
    /* Five columns do not fit a phone: the table scrolls in its own box instead of widening the page. */
    .scroll { overflow-x: auto; max-width: 100%; }
    td, th { padding: 0.2rem 0.5rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
    td.num { text-align: right; font-variant-numeric: tabular-nums; }
    button { font: inherit; padding: 0.25rem 0.6rem; cursor: pointer; }
  `;

  /** Re-reads the storage each time the element is shown again (its tab was hidden). */
  private visibility: ResizeObserver | null = null;

  override connectedCallback(): void {
    super.connectedCallback();
    void this.refresh();
    // Training runs in another tab of the app while this one is hidden: what was read at start goes stale
    // (0 B shown beside a run's checkpoints), so each time it is laid out again after being hidden (no box,
    // as under a hidden tab panel) it is read again. Only that change counts: its own re-render resizes it too.
    if (typeof ResizeObserver === 'function') {
      let shown = true;
      this.visibility = new ResizeObserver((entries) => {
        const now = entries.some((e) => e.contentRect.width > 0 || e.contentRect.height > 0);
        if (now && !shown) void this.refresh();
        shown = now;
      });
      this.visibility.observe(this);
    }
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.visibility?.disconnect();
    this.visibility = null;
  }

  refresh(): Promise<void> {
    return this.stored.refresh();
  }

  override render() {
    const { usage: u, busy, message } = this.stored;
    if (!u) return html`<p aria-busy="true">Reading training storage…</p>`;
    return html`
      <p data-testid="training-storage-total">Training uses ${formatBytes(u.totalBytes)}: ${count(u.runs.reduce((n, r) => n + r.checkpoints, 0), 'checkpoint')} of ${count(u.runs.length, 'run')}, and ${count(u.keptAdapters, 'adapter')} kept by name or imported (${formatBytes(u.keptAdapterBytes)}).</p>
      ${u.runs.length
        ? html`<div class="scroll"><table data-testid="training-storage-runs">
            <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Checkpoints</th><th scope="col">Adapters</th><th scope="col">Optimizer state</th></tr></thead>
            <tbody>${u.runs.map((r) => html`<tr><td>${r.runId}</td><td>${r.status}</td><td class="num">${r.checkpoints}</td><td class="num">${formatBytes(r.adapterBytes)}</td><td class="num">${formatBytes(r.momentBytes)}</td></tr>`)}</tbody>
          </table></div>`
        : nothing}
      <p>
        <button type="button" ?disabled=${busy || u.freeableBytes === 0} @click=${() => this.stored.free()}>Free ${formatBytes(u.freeableBytes)} of finished runs</button>
        <small>Keeps each finished run's result adapter, adapters you saved by name, and every checkpoint of paused runs (they need them to resume).</small>
      </p>
      ${message ? html`<p role="status" data-testid="training-storage-message">${message}</p>` : nothing}
    `;
  }
}
if (!customElements.get('agentflow-training-storage')) customElements.define('agentflow-training-storage', AgentflowTrainingStorage);
