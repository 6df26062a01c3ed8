// The Experiments tab's look.
import { css } from 'lit';
import { panelStyles } from './panel-styles';

export const experimentsPanelStyles = [
  ...panelStyles,
  css`
  section { margin-bottom: 1.25rem; }
  .row { display: flex; gap: 0.75rem; flex-wrap: wrap; align-items: end; }
  label { display: grid; gap: 0.2rem; }
  input, select { font: inherit; }
  .problems { color: var(--agentflow-error-color, #b00020); }
  table { width: 100%; font-size: 0.9rem; }
  td, th { padding: 0.2rem 0.4rem; text-align: left; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); vertical-align: top; }
  /* break-word, not anywhere: 'anywhere' lets a column shrink to one letter wide ("loade / d"); a long
     word still breaks, and a table too wide for the panel scrolls in its box. */
  td.ans { max-width: 18rem; overflow-wrap: break-word; }
  /* At 390 px the Runs table squeezed each name to a word per line: the name keeps a readable width and the
     table scrolls in its box instead. */
  table.runs td.run-name { min-width: 15rem; }
  table.runs td.actions { min-width: 13rem; }
  .ab { display: inline-block; min-width: 1.3em; text-align: center; font-weight: 600; border-radius: 3px; margin-right: 0.3rem;
    background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 15%, transparent); }
  .rename input { width: min(24rem, 100%); }
  .stored select { max-width: 100%; }
  .charts { display: flex; gap: 1rem; flex-wrap: wrap; }
  .charts figure { margin: 0; width: min(22rem, 100%); }
  figcaption { font-size: 0.8rem; text-align: center; }
  .compare-summaries { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(22rem, 100%), 1fr)); gap: 1rem; }
  .table-scroll { overflow-x: auto; }
  tr.changed { background: color-mix(in srgb, var(--agentflow-accent, #2563eb) 8%, transparent); }
  progress { display: block; }
  .yes { color: #15803d; }
  .scripted { color: #92400e; font-size: 0.85em; }
  .no { color: #b91c1c; }
  .trajectory dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.1rem 0.6rem; }
  .trajectory pre { white-space: pre-wrap; margin: 0; }
`,
];
