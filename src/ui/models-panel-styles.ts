// The Models & GPU tab's look.
import { css } from 'lit';
import { panelStyles } from './panel-styles';

export const modelsPanelStyles = [
  ...panelStyles,
  css`
  section { margin-bottom: 1.5rem; }
  label.field { display: grid; gap: 0.2rem; margin: 0.4rem 0; max-width: 32rem; }
  input[type='text'], input:not([type]) { font: inherit; padding: 0.3rem; }
  .warn { color: var(--agentflow-error-color, #b00020); }
  /* Notes that report, not warn (a cancelled load, what a field is read as): the text colour, on a faint box. */
  .note { color: inherit; background: color-mix(in srgb, currentColor 6%, transparent); border-left: 3px solid color-mix(in srgb, currentColor 35%, transparent); padding: 0.3rem 0.6rem; max-width: 40rem; }
  .field-note { font-size: 0.85rem; opacity: 0.85; max-width: 32rem; overflow-wrap: anywhere; }
  [role='alert'], [role='status'] { overflow-wrap: anywhere; }
  td, th { padding: 0.2rem 0.6rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
  td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  /* A model's URL has no spaces: it may break anywhere, so the table fits a phone instead of running off it. */
  td.model { overflow-wrap: anywhere; }
  .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  .row { display: flex; gap: 0.5rem; flex-wrap: wrap; align-items: center; }
  .field-error { color: var(--agentflow-error-color, #b00020); font-size: 0.85rem; }
  .size { font-size: 0.9rem; margin: 0.4rem 0; }
  label.check { display: flex; gap: 0.4rem; align-items: baseline; margin: 0.4rem 0; max-width: 32rem; }
`,
];
