// The chat's first screen when no model is loaded: three ways in, each a button to the place it names (the
// scripted demo always; loading a model and training the toy where the host page offers them).
import { html, nothing } from 'lit';

export interface StartView {
  /** What a host loading models for this chat is loading, shown instead of the ways in. */
  modelsLoading: string | null;
  useDemo(): void;
  loadModelAction: (() => void) | undefined;
  trainToyAction: (() => void) | undefined;
}

export function renderNoModel(v: StartView) {
  if (v.modelsLoading) return html`<div class="no-model" role="status" data-testid="no-model"><p>${v.modelsLoading}</p></div>`;
  const host = !!v.loadModelAction;
  return html`<div class="no-model" part="no-model" data-testid="no-model">
    <p><strong>No model is loaded</strong>, so the agent cannot answer yet.${host ? ' To start:' : ' This page has given the chat no model (planner-model attribute or engines property); the scripted demo shows how it works.'}</p>
    <ul class="start" data-testid="start">
      <li>
        <button type="button" part="button" @click=${() => v.useDemo()}>Try the demo</button>
        <span>a scripted agent answers at once, with no download; its answers are made up by a script, not written by a model.</span>
      </li>
      ${host
        ? html`<li>
            <button type="button" class="primary" part="button" @click=${() => v.loadModelAction?.()}>Load a model</button>
            <span>for real answers: it downloads once and stays in this browser.</span>
          </li>`
        : nothing}
      ${v.trainToyAction
        ? html`<li>
            <button type="button" part="button" @click=${() => v.trainToyAction?.()}>Train the toy</button>
            <span>watch the planner's training (Flow-GRPO) on a tiny built-in task, in seconds and with no download.</span>
          </li>`
        : nothing}
    </ul>
  </div>`;
}
