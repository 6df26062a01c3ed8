// Deleting stored work (a conversation, an experiment run, a trained adapter) cannot be undone, and deleting
// a downloaded model costs its download again, so a Delete button first turns into this question. The safe
// answer is the one focused, and Escape gives it.
import { css, html, type TemplateResult } from 'lit';

/** Styles for the question; components that use it add these to their own. */
export const deleteQuestionStyles = css`
  .delete-question { display: inline-flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 0.4rem; }
`;

/**
 * The inline question that stands in for a Delete button until answered. `what` names the thing for
 * assistive technology and the buttons (adapter “x”); `shown` is what the row beside it makes clear enough
 * (this adapter); `consequence` what deleting costs.
 */
export function deleteQuestion(what: string, shown: string, yes: () => void, no: () => void, consequence = 'This cannot be undone.'): TemplateResult {
  return html`<span class="delete-question" role="group" aria-label=${`Delete ${what}?`} data-testid="delete-question"
    @keydown=${(e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        no();
      }
    }}>
    Delete ${shown}? ${consequence}
    <button type="button" part="button" aria-label=${`Yes, delete ${what}`} @click=${yes}>Delete</button>
    <button type="button" part="button" class="keep" aria-label=${`No, keep ${what}`} @click=${no}>Keep</button>
  </span>`;
}

/** Moves focus to the open question's safe answer (its Delete button, which had focus, is gone). */
export async function focusDeleteQuestion(el: { updateComplete: Promise<boolean>; renderRoot: ParentNode }): Promise<void> {
  await el.updateComplete;
  el.renderRoot.querySelector<HTMLButtonElement>('[data-testid="delete-question"] button.keep')?.focus();
}
