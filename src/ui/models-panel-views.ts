// Parts of the Models & GPU tab: a download's progress bar, the download size line, the question before
// replacing the engines something runs on, the planner-alone offer and the table of cached models.
import { html, nothing } from 'lit';
import type { CachedModels } from '../controllers/engines/cached-models';
import type { DownloadSizesReport } from '../controllers/engines/download-sizes';
import { describeUses, manyUses } from '../controllers/engines/engine-use';
import { hostsInWords } from '../controllers/engines/load-failure';
import type { CachedModel } from '../controllers/engines/model-cache';
import type { SizeReport } from '../controllers/engines/model-files';
import type { ModelLoad } from '../controllers/engines/model-load';
import { formatBytes, formatSeconds, type ProgressSummary } from '../controllers/progress-tracker';
import type { SwapQuestion } from '../controllers/engines/swap-question';
import { deleteQuestion, focusDeleteQuestion } from './delete-question';

export function renderProgress(which: string, s: ProgressSummary) {
  const pct = s.percent === null ? null : Math.round(s.percent);
  return html`<div class="progress" data-testid=${`progress-${which}`}>
    <label>
      ${which === 'planner' ? 'Planner' : 'Shared model'}: ${formatBytes(s.bytesDone)} of ${formatBytes(s.bytesTotal)}${pct === null ? '' : ` (${pct}%)`}${s.secondsLeft !== null && (pct ?? 0) < 100 ? `, about ${formatSeconds(s.secondsLeft)} left` : ''}
      <br /><progress max="100" .value=${pct ?? 0}></progress>
    </label>
    <div><small>${s.status}</small></div>
  </div>`;
}

export function renderConfirmSwap(q: SwapQuestion) {
  const c = q.asked;
  if (!c) return nothing;
  const what = describeUses(c.uses);
  const many = manyUses(c.uses);
  return html`<div role="alertdialog" aria-labelledby="swap-question" data-testid="swap-confirm">
    <p id="swap-question">${what[0].toUpperCase()}${what.slice(1)} ${many ? 'are' : 'is'} using the loaded models. ${c.action} stops ${many ? 'them' : 'it'}${c.when}: ${c.uses.map((u) => u.kept).join('; ')}.</p>
    <div class="row">
      <button type="button" @click=${() => q.accept()}>Stop ${many ? 'them' : 'it'} and continue</button>
      <button type="button" @click=${() => q.decline()}>Keep ${many ? 'them' : 'it'} running</button>
    </div>
  </div>`;
}

export function renderPartial(load: ModelLoad, usePartial: () => void) {
  const p = load.partial;
  if (!p) return nothing;
  return html`<div role="alert" class="warn" data-testid="partial-load">
    <p>${p.message} The planner, ${p.engines.planner.id.replace(/^[\w-]+:/, '')}, can do every step on its own (plan, run tools, check and answer), until the shared model can be downloaded.</p>
    <div class="row">
      <button type="button" @click=${usePartial}>Go on with the planner alone</button>
      <button type="button" @click=${() => load.dropPartial()}>Keep the models in use</button>
    </div>
    ${p.detail !== p.message ? html`<details class="detail"><summary>What web-llm said</summary><p>${p.detail}</p></details>` : nothing}
  </div>`;
}

export interface SizesView {
  sizes: DownloadSizesReport | null;
  plannerFieldError: string | null;
  plannerFromShared: boolean;
  busy: boolean;
  check(): void;
}

export function renderSizes(v: SizesView) {
  const z = v.sizes;
  if (!z || (z.error && v.plannerFieldError)) return nothing;
  if (z.error) return html`<p class="size" data-testid="download-size">Download size: unknown (${z.error})</p>`;
  const line = (label: string, r: SizeReport | null) => {
    if (!r) return null;
    if (r.complete) return `${label}: ${formatBytes(r.total)}, all in this browser already`;
    const left = r.total - r.cached;
    if (z.checked && r.unknown > 0 && r.unreachable.length) {
      const offline = globalThis.navigator?.onLine === false ? ' (you appear to be offline)' : '';
      return `${label}: size unknown, ${hostsInWords(r.unreachable)} could not be reached${offline}${r.cached ? `; ${formatBytes(r.cached)} already in this browser` : ''}`;
    }
    if (r.unknown === 0) return `${label}: ${formatBytes(left)} to download${r.cached ? ` (${formatBytes(r.cached)} of ${formatBytes(r.total)} already in this browser)` : ''}`;
    if (z.checked) return `${label}: at least ${formatBytes(left)} to download (the server did not give every file's size)`;
    return `${label}: ${r.cached ? `${formatBytes(r.cached)} already in this browser, the rest` : 'not in this browser;'} size not checked yet`;
  };
  const parts = [line('Planner', z.planner), v.plannerFromShared ? null : line('shared model', z.shared)].filter(Boolean);
  const both = z.both && z.planner && z.shared && !v.plannerFromShared && z.both.unknown === 0 && !z.both.complete ? `; in all ${formatBytes(z.both.total - z.both.cached)}` : '';
  const anyUnknown = [z.planner, z.shared].some((r) => r && r.unknown > 0 && !r.complete);
  return html`<div class="size row">
    <span data-testid="download-size">Download size: ${parts.join('; ')}${both}.</span>
    ${anyUnknown && !z.checked
      ? html`<button type="button" ?disabled=${v.busy} title="Asks the models' servers for the file sizes; downloads no model file" @click=${() => v.check()}>Check download size</button>`
      : nothing}
  </div>`;
}

export interface CachedModelsView {
  host: Parameters<typeof focusDeleteQuestion>[0];
  cached: CachedModels;
  /** The cached model (its key) whose Delete button asks first. */
  deleting: string | null;
  setDeleting(key: string | null): void;
  deleteModel(m: CachedModel): void;
}

export function renderCachedModels(v: CachedModelsView) {
  const list = v.cached.list;
  return html`${list === null
      ? html`<p aria-busy="true">Reading the cache…</p>`
      : list.length === 0
        ? html`<p data-testid="cache-empty">No models are stored in this browser yet.</p>`
        : html`<table data-testid="cached-models">
            <thead><tr><th scope="col">Model</th><th scope="col">Files</th><th scope="col">Size</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              ${list.map(
                (m) => html`<tr>
                  <td class="model">${m.label}</td><td class="num">${m.files}</td><td class="num">${formatBytes(m.bytes)}</td>
                  <td>${v.deleting === m.key
                    ? deleteQuestion(`cached model ${m.label}`, 'this model’s files', () => v.deleteModel(m), () => v.setDeleting(null), `Loading it again downloads ${formatBytes(m.bytes)}.`)
                    : html`<button type="button" aria-label=${`Delete cached model ${m.label}`} @click=${() => {
                        v.setDeleting(m.key);
                        void focusDeleteQuestion(v.host);
                      }}>Delete</button>`}</td>
              </tr>`,
              )}
            </tbody>
          </table>`}
    <button type="button" @click=${() => void v.cached.refresh()}>Refresh</button>`;
}
