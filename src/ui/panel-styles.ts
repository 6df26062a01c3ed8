// What the Models & GPU and Experiments tabs look like alike: headings, buttons, focus rings, tables and
// progress bars, and the delete question both ask. Each tab's own sheet follows it and adds to or overrides it.
import { css } from 'lit';
import { deleteQuestionStyles } from './delete-question';

export const panelStyles = [
  deleteQuestionStyles,
  css`
  :host { display: block; }
  h3 { font-size: 1.05rem; margin: 0.5rem 0; }
  button { font: inherit; padding: 0.25rem 0.6rem; cursor: pointer; }
  button:focus-visible, input:focus-visible, select:focus-visible { outline: 2px solid var(--agentflow-accent, #2563eb); outline-offset: 2px; }
  table { border-collapse: collapse; }
  progress { width: min(32rem, 100%); }
`,
];
