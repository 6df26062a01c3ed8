// <agentflow-chat>'s look: every colour, radius and font comes from a --agentflow-* custom property a page may
// set, and the layout follows the element's own width (a container query), not the window's.
import { css } from 'lit';
import { deleteQuestionStyles } from './delete-question';

export const agentflowChatStyles = [
  deleteQuestionStyles,
  css`
  :host {
    display: block;
    /* The element's own width, not the window's, decides its layout: a page may embed it in a narrow column. */
    container-type: inline-size;
    font: var(--agentflow-font, 14px/1.45 system-ui, sans-serif);
    color: var(--agentflow-fg, inherit);
    background: var(--agentflow-bg, transparent);
    --_accent: var(--agentflow-accent, #2563eb);
    --_radius: var(--agentflow-radius, 8px);
    --_muted: var(--agentflow-muted, color-mix(in srgb, currentColor 60%, transparent));
  }
  .layout { display: grid; grid-template-columns: minmax(11rem, 15rem) minmax(0, 1fr); gap: 1rem; }
  aside { border-right: 1px solid color-mix(in srgb, currentColor 15%, transparent); padding-right: 0.75rem; }
  .aside-head { display: flex; justify-content: space-between; align-items: center; gap: 0.25rem; }
  button.fold { display: none; }
  /*
   * Stacked on a phone: the list sits above the chat, so its divider goes below it, not down its side, and
   * it folds into one line naming the conversation shown (unfolded, a long list pushed the chat off screen).
   */
  @container (max-width: 40rem) {
    .layout { grid-template-columns: minmax(0, 1fr); }
    aside { border-right: none; padding-right: 0; border-bottom: 1px solid color-mix(in srgb, currentColor 15%, transparent); padding-bottom: 0.5rem; }
    button.fold { display: block; flex: 1; min-width: 0; text-align: left; border: none; padding: 0.2rem 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    button.fold::before { content: '▸ '; }
    button.fold[aria-expanded='true']::before { content: '▾ '; }
    #conv-h { display: none; }
    aside:not(.open) .conv-body { display: none; }
  }
  aside ul { list-style: none; margin: 0; padding: 0; }
  /* The question gets the sidebar's whole width, up to two lines (all of it on hover); status and actions below. */
  aside li { display: grid; grid-template-columns: 1fr auto auto; gap: 0.1rem 0.25rem; align-items: center; margin: 0.35rem 0; }
  aside li button.open { grid-column: 1 / -1; min-width: 0; text-align: left; overflow: hidden; overflow-wrap: anywhere; display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; line-clamp: 2; }
  aside li button:not(.open) { font-size: 0.8rem; padding: 0 0.4rem; }
  .status { font-size: 0.75rem; color: var(--_muted); }
  button { font: inherit; border-radius: calc(var(--_radius) / 2); border: 1px solid color-mix(in srgb, currentColor 30%, transparent); background: transparent; color: inherit; padding: 0.2rem 0.5rem; cursor: pointer; }
  button.primary { background: var(--_accent); border-color: var(--_accent); color: white; }
  button:focus-visible, textarea:focus-visible, input:focus-visible, summary:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
  button:disabled { opacity: 0.5; cursor: default; }
  .messages { display: flex; flex-direction: column; gap: 0.75rem; min-height: 6rem; }
  .message { padding: 0.5rem 0.75rem; border-radius: var(--_radius); max-width: 100%; overflow-wrap: anywhere; }
  .user { align-self: flex-end; background: color-mix(in srgb, var(--_accent) 15%, transparent); white-space: pre-wrap; }
  .answer { align-self: stretch; background: color-mix(in srgb, currentColor 6%, transparent); }
  .answer .text.plain { white-space: pre-wrap; }
  .answer pre, .trajectory pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font-size: 0.85em; }
  /* A wide table or image in an answer scrolls or shrinks inside the answer, never past the element's border. */
  .answer table { display: block; max-width: 100%; overflow-x: auto; }
  .answer img { max-width: 100%; }
  .calls { margin: 0 0 0.25rem; padding-left: 1.2rem; font-size: 0.8rem; color: var(--_muted); }
  .live-stats { font-variant-numeric: tabular-nums; }
  details.group { margin-top: 0.5rem; font-size: 0.85rem; }
  details.group summary { cursor: pointer; color: var(--_muted); }
  .hint { margin: 0.5rem 0 0; }
  .live { font-size: 0.85rem; color: var(--_muted); white-space: pre-wrap; }
  .visually-hidden { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
  .trajectory dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.15rem 0.75rem; margin: 0.25rem 0; }
  .trajectory dt { font-weight: 600; }
  .trajectory dd { margin: 0; }
  .trajectory .bad { color: var(--agentflow-error-color, #b00020); }
  .turns { padding-left: 1rem; }
  form { display: flex; gap: 0.5rem; margin-top: 0.75rem; align-items: flex-end; }
  textarea { flex: 1; font: inherit; min-height: 2.6rem; resize: vertical; border-radius: var(--_radius); padding: 0.4rem; color: inherit; background: transparent; border: 1px solid color-mix(in srgb, currentColor 30%, transparent); }
  .error { color: var(--agentflow-error-color, #b00020); white-space: pre-wrap; }
  progress { width: 100%; }
  details.tools { margin-top: 0.5rem; font-size: 0.85rem; }
  .empty { color: var(--_muted); }
  .no-model { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: var(--_radius); padding: 0.6rem 0.75rem; }
  .no-model p { margin: 0 0 0.5rem; }
  .confirm .row { display: flex; gap: 0.5rem; flex-wrap: wrap; }
  .start { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.4rem; }
  .start li { display: flex; gap: 0.5rem; align-items: baseline; flex-wrap: wrap; }
  .start li button { flex: none; min-width: 8.5rem; }
  .start li span { flex: 1 1 12rem; color: var(--_muted); }
  .scripted { font-size: 0.75rem; color: #92400e; margin: 0 0 0.25rem; }
  .confirm { margin-top: 0.4rem; }
  aside li .delete-question { grid-column: 1 / -1; }
`,
];
