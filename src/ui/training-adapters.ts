// <agentflow-training-adapters>: the Training tab's stored LoRA adapters, grouped under the run that made
// them (its result marked) with kept and imported ones apart, and PEFT import and export. Activate is
// offered only where the adapter can go on the loaded planner: never for the toy planner's, and, with a
// planner loaded, only for adapters whose shapes fit it (the others say why). The panel hands the lists in
// and re-reads them on `training-adapters-changed`.
import { LitElement, css, html, nothing } from 'lit';
import type { AdapterRecord } from '../store/records';
import type { StoredRun } from '../trainer/run/run-store';
import { adapterZip } from '../controllers/training/adapter-export';
import { activateRefusal, saveActiveAdapter, type PlannerBase } from '../controllers/training/adapter-activation';
import { deleteAdapter, importAdapterFiles, importedAdapterName, keepAdapter } from '../controllers/training/adapter-store';
import { deleteQuestion, deleteQuestionStyles, focusDeleteQuestion } from './delete-question';
import { downloadBlob } from './download';

interface Group {
  key: string;
  title: string;
  run: StoredRun | null;
  adapters: AdapterRecord[];
}

/** Adapters by the run that made them (runs newest first), then those imported or from runs no longer stored. */
export function groupAdapters(adapters: readonly AdapterRecord[], runs: readonly StoredRun[]): Group[] {
  const groups: Group[] = [];
  for (const run of runs) {
    const mine = adapters.filter((a) => a.trainingRunId === run.id);
    if (mine.length) groups.push({ key: run.id, title: `${run.spec.label}, run ${run.id}`, run, adapters: mine });
  }
  const known = new Set(runs.map((r) => r.id));
  const orphans = new Map<string, AdapterRecord[]>();
  for (const a of adapters) if (a.trainingRunId && !known.has(a.trainingRunId)) orphans.set(a.trainingRunId, [...(orphans.get(a.trainingRunId) ?? []), a]);
  for (const [id, list] of orphans) groups.push({ key: id, title: `Run ${id} (its record is gone)`, run: null, adapters: list });
  const imported = adapters.filter((a) => !a.trainingRunId);
  if (imported.length) groups.push({ key: '', title: 'Imported', run: null, adapters: imported });
  return groups;
}

export class AgentflowTrainingAdapters extends LitElement {
  static override properties = {
    dbName: { type: String, attribute: 'db-name' },
    adapters: { attribute: false },
    runs: { attribute: false },
    active: { attribute: false },
    planner: { attribute: false },
    keeping: { state: true },
    deleting: { state: true },
    status: { state: true },
    error: { state: true },
  };
  declare dbName: string | undefined;
  declare adapters: AdapterRecord[];
  declare runs: StoredRun[];
  declare active: string | null;
  declare planner: PlannerBase | null;
  declare keeping: string | null;
  declare deleting: string | null;
  declare status: string;
  declare error: string | null;

  constructor() {
    super();
    this.adapters = [];
    this.runs = [];
    this.active = null;
    this.planner = null;
    this.keeping = null;
    this.deleting = null;
    this.status = '';
    this.error = null;
  }

  static override styles = [
    deleteQuestionStyles,
    css`
      :host { display: block; }
      input, button { font: inherit; }
      button { padding: 0.25rem 0.6rem; cursor: pointer; }
      button:focus-visible, input:focus-visible, summary:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
      details { margin: 0.5rem 0; }
      summary { cursor: pointer; overflow-wrap: anywhere; }
      table { border-collapse: collapse; }
      td, th { padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
      /* On a phone a table scrolls in its own box rather than squeezing names onto a line per part. */
      .table-scroll { overflow-x: auto; max-width: 100%; }
      .adapters td:first-child { min-width: 10rem; }
      .why { display: block; max-width: 22rem; }
      .error { color: var(--agentflow-error-color, #b00020); }
      fieldset { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: 6px; margin: 1rem 0; min-width: 0; }
      .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; margin: 0.5rem 0; }
      label { display: grid; gap: 0.2rem; }
      label input { min-width: 0; max-width: 100%; }
      /* A checkpoint's name already carries its time; the date column is the one a narrow screen does without.
         Kept and imported adapters bear names of the user's choosing: their date moves under the name. */
      .adapters .created-inline { display: none; }
      @media (max-width: 30rem) {
        .adapters .created { display: none; }
        .adapters .created-inline { display: block; }
      }
    `,
  ];

  private changed(): void {
    this.dispatchEvent(new CustomEvent('training-adapters-changed', { bubbles: true, composed: true }));
  }

  private async activate(id: string | null): Promise<void> {
    await saveActiveAdapter(id, this.dbName);
    this.active = id;
    this.dispatchEvent(new CustomEvent('agentflow-adapter', { detail: { adapterId: id }, bubbles: true, composed: true }));
    this.changed();
  }

  private async deleteStored(id: string): Promise<void> {
    this.deleting = null;
    await deleteAdapter(id, this.dbName);
    if (this.active === id) await this.activate(null);
    this.changed();
  }

  private async keep(a: AdapterRecord, name: string): Promise<void> {
    try {
      await keepAdapter(a.id, name, this.dbName);
      this.keeping = null;
      this.error = null;
    } catch (e) {
      this.error = (e as Error).message;
    }
    this.changed();
  }

  /** One zip: a folder named after the adapter with adapter_config.json and adapter_model.safetensors. */
  exportAdapter(a: AdapterRecord): void {
    const z = adapterZip(a);
    downloadBlob(new Blob([z.bytes as Uint8Array<ArrayBuffer>], { type: 'application/zip' }), z.fileName);
    this.status = `Exported “${a.name}” as ${z.fileName}: unzipped, its folder ${z.folder}/ loads with PeftModel.from_pretrained.`;
  }

  private async importAdapter(): Promise<void> {
    const cfg = (this.renderRoot.querySelector('#import-config') as HTMLInputElement).files?.[0];
    const w = (this.renderRoot.querySelector('#import-weights') as HTMLInputElement).files?.[0];
    this.status = '';
    if (!cfg || !w) {
      this.error = 'Choose both files of the adapter: adapter_config.json and adapter_model.safetensors.';
      return;
    }
    const nameInput = this.renderRoot.querySelector('#import-name') as HTMLInputElement;
    const name = nameInput.value.trim() || importedAdapterName(w.name);
    try {
      await importAdapterFiles(name, await cfg.text(), new Uint8Array(await w.arrayBuffer()), this.dbName, { config: cfg.name, weights: w.name });
      this.error = null;
      this.status = `Imported “${name}” from ${w.name}.`;
      nameInput.value = '';
    } catch (e) {
      this.error = `Import failed: ${(e as Error).message}`;
    }
    this.changed();
  }

  private row(a: AdapterRecord, run: StoredRun | null) {
    const active = this.active === a.id;
    const refusal = activateRefusal(a, this.planner);
    const result = run?.result?.adapterId === a.id;
    return html`<tr data-adapter=${a.id}>
      <td>${a.name}${result ? html` <strong data-testid="result-mark">(result${run!.result!.reason === 'best' ? ': best rolling reward' : ': last step'})</strong>` : nothing}${active
        ? html` <strong>(active)</strong>`
        : nothing}${a.keep ? html` <small>(kept)</small>` : nothing}${a.keep || !a.trainingRunId
        ? html`<small class="created-inline" data-testid="created-inline">${new Date(a.createdAt).toLocaleString()}</small>`
        : nothing}</td>
      <td>${a.baseModel || '—'}</td>
      <td class="created">${new Date(a.createdAt).toLocaleString()}</td>
      <td>
        ${active || !refusal
          ? html`<button type="button" aria-pressed=${active ? 'true' : 'false'} aria-label=${`${active ? 'Deactivate' : 'Activate'} adapter ${a.name}`} @click=${() => this.activate(active ? null : a.id)}>${active ? 'Deactivate' : 'Activate'}</button>`
          : html`<small class="why" data-testid="activate-refusal">Not for chat: ${refusal}.</small>`}
        <button type="button" aria-label=${`Export adapter ${a.name}`} title="A zip of a PEFT adapter folder" @click=${() => this.exportAdapter(a)}>Export</button>
        ${a.trainingRunId && !a.keep
          ? this.keeping === a.id
            ? html`<input type="text" aria-label=${`Name to keep adapter ${a.name} under`} .value=${a.name}
                  @keydown=${(e: KeyboardEvent) => e.key === 'Enter' && this.keep(a, (e.target as HTMLInputElement).value)} />
                <button type="button" aria-label=${`Keep adapter ${a.name} under this name`} @click=${(e: Event) => this.keep(a, ((e.target as HTMLElement).previousElementSibling as HTMLInputElement).value)}>Keep</button>`
            : html`<button type="button" aria-label=${`Keep adapter ${a.name} under a name`} title="Checkpoints are pruned; a kept adapter stays" @click=${() => (this.keeping = a.id)}>Keep as…</button>`
          : nothing}
        ${this.deleting === a.id
          ? deleteQuestion(`adapter ${a.name}`, 'this adapter', () => void this.deleteStored(a.id), () => (this.deleting = null))
          : html`<button type="button" aria-label=${`Delete adapter ${a.name}`} @click=${() => {
              this.deleting = a.id;
              void focusDeleteQuestion(this);
            }}>Delete</button>`}
      </td>
    </tr>`;
  }

  override render() {
    const groups = groupAdapters(this.adapters, this.runs);
    return html`
      <h3>Adapters</h3>
      ${groups.length === 0
        ? html`<p>No adapters stored yet. Training saves one at each checkpoint.</p>`
        : groups.map(
            (g, i) => html`<details class="adapter-group" data-testid="adapter-group" ?open=${i === 0 || g.adapters.some((a) => a.id === this.active)}>
              <summary>${g.title}: ${g.adapters.length} adapter${g.adapters.length === 1 ? '' : 's'}${g.run?.result ? `, result step ${g.run.result.step}` : ''}</summary>
              <div class="table-scroll" role="region" aria-label=${`Adapters of ${g.title}`} tabindex="0"><table class="adapters" data-testid="adapters">
                <thead><tr><th scope="col">Adapter</th><th scope="col">Base model</th><th scope="col" class="created">Created</th><th scope="col">Actions</th></tr></thead>
                <tbody>${g.adapters.map((a) => this.row(a, g.run))}</tbody>
              </table></div>
            </details>`,
          )}
      ${this.error ? html`<p class="error" role="alert">${this.error}</p>` : nothing}
      <fieldset>
        <legend>Import a PEFT adapter</legend>
        <div class="row">
          <label>adapter_config.json<input id="import-config" type="file" accept=".json,application/json" /></label>
          <label>adapter_model.safetensors<input id="import-weights" type="file" accept=".safetensors" /></label>
          <label>Name (optional)<input id="import-name" type="text" placeholder="from the file name" /></label>
          <button type="button" @click=${() => this.importAdapter()}>Import</button>
        </div>
      </fieldset>
      ${this.status ? html`<p role="status" data-testid="import-status">${this.status}</p>` : nothing}
    `;
  }
}
if (!customElements.get('agentflow-training-adapters')) customElements.define('agentflow-training-adapters', AgentflowTrainingAdapters);
