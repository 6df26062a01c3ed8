// The one look of a notice across the app and the chat element, by what it says: news (a swap done, no model
// loaded yet) in the page's own colour, a caution in amber, a failure in red. Red for a successful swap and
// orange for "No model is loaded" read as failures to a newcomer (issue 28 item 4).
import { css } from 'lit';

/** info: something happened or is so, nothing is wrong; warn: works, but mind this; error: something failed. */
export type NoticeKind = 'info' | 'warn' | 'error';

export const noticeStyles = css`
  .notice { margin: 0 0 0.75rem; padding: 0.35rem 0.6rem; border-left: 3px solid; border-radius: 4px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .notice.info { color: inherit; border-color: color-mix(in srgb, currentColor 35%, transparent); background: color-mix(in srgb, currentColor 5%, transparent); }
  .notice.warn { color: var(--agentflow-warn-color, #92400e); border-color: currentColor; }
  .notice.error { color: var(--agentflow-error-color, #b00020); border-color: currentColor; }
`;

/** A notice's role: a failure interrupts a screen reader (alert); news waits its turn (status). */
export function noticeRole(kind: NoticeKind): 'alert' | 'status' {
  return kind === 'error' ? 'alert' : 'status';
}
