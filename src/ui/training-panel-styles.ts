// The Training tab's styles, shared by the panel and the views it renders (settings form, runs list, charts).
import { css } from 'lit';

export const trainingPanelStyles = css`
  :host { display: block; }
  fieldset { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: 6px; margin: 0 0 1rem; min-width: 0; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: 0.5rem 1rem; }
  label { display: grid; gap: 0.2rem; }
  .grid input, .grid select { min-width: 0; width: 100%; box-sizing: border-box; }
  /* The dataset's option names are long: on a row of their own, sized to the name, never clipped. */
  .grid label.dataset { grid-column: 1 / -1; }
  .grid label.dataset select { width: auto; max-width: 100%; justify-self: start; }
  .targets { margin-top: 0.5rem; }
  .targets label { display: inline-flex; gap: 0.25rem; margin-right: 0.75rem; }
  details.advanced, details.agent-setup { margin: 0.5rem 0; }
  details > summary { cursor: pointer; }
  details.advanced[open] > summary { margin-bottom: 0.5rem; }
  input, select, button { font: inherit; }
  button { padding: 0.25rem 0.6rem; cursor: pointer; }
  button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
  .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; margin: 0.5rem 0; }
  label.smoothing { justify-items: start; }
  .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: 0.75rem; }
  figure { margin: 0; }
  figcaption { font-size: 0.8rem; text-align: center; }
  .error { color: var(--agentflow-error-color, #b00020); }
  .warning { color: var(--agentflow-warning-color, #8a5a00); font-weight: 600; }
  /* Information (how a run restarted, a step a pause dropped) reads as information, not as a fault. */
  .note { color: inherit; border-left: 3px solid color-mix(in srgb, currentColor 30%, transparent); padding-left: 0.5rem; }
  .runs { padding-left: 1.2rem; }
  .runs li { margin: 0.25rem 0; overflow-wrap: anywhere; }
  .runs .status { font-weight: 600; }
`;
