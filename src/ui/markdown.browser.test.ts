// The Markdown renderer in Chromium, with the real DOMPurify: the worst answers it still renders stay within
// its output limits once in the page, the ones beyond them show as plain text, and an image is text that
// the page never fetches.
import { describe, expect, it } from 'vitest';
import { acceptedShapes, refusedShapes } from '../../tests/support/markdown-shapes';
import { MARKDOWN_LIMITS, markdownOrText, renderMarkdown } from './markdown';

/** `html` in a detached-from-nothing element of the page, as the chat puts an answer there. */
function show(html: string): HTMLElement {
  const el = document.createElement('div');
  el.innerHTML = html;
  document.body.append(el);
  return el;
}

describe('Markdown whose HTML would dwarf it, in Chromium', () => {
  it('renders the worst shapes within the limits, no bigger than the limits in the page', () => {
    for (const { name, text } of acceptedShapes(MARKDOWN_LIMITS)) {
      const r = markdownOrText(text);
      expect('html' in r ? { name } : { name, why: r.why }).toEqual({ name });
      const html = 'html' in r ? r.html : '';
      expect(html.length, name).toBeLessThanOrEqual(MARKDOWN_LIMITS.htmlChars);
      const el = show(html);
      expect(el.querySelectorAll('*').length, name).toBeLessThanOrEqual(MARKDOWN_LIMITS.elements);
      el.remove();
    }
  });

  it('shows the shapes beyond them as plain text, saying why', () => {
    for (const { name, text, why } of refusedShapes(MARKDOWN_LIMITS)) {
      const r = markdownOrText(text);
      expect('why' in r ? r.why : 'rendered as Markdown', name).toMatch(why);
    }
  });

  it('shows an image as its alt text and address, and never loads it', async () => {
    const probe = `${location.origin}/md-image-probe-${Math.random()}.png`;
    const control = `${location.origin}/md-image-control-${Math.random()}.png`;
    const requested = (u: string) => performance.getEntriesByType('resource').some((e) => e.name === u);
    // A page that has loaded many modules has a full resource-timing buffer, where no new request shows.
    performance.clearResourceTimings();
    const el = show(renderMarkdown(`Look: ![a black cat](${probe} "Cat") ![<img src=x onerror=alert(1)>](${probe}?2)`));
    expect(el.querySelector('img')).toBeNull();
    expect(el.textContent?.trim()).toBe(`Look: a black cat (image: ${probe}) <img src=x onerror=alert(1)> (image: ${probe}?2)`);
    // A real <img> to the same server shows up in resource timing, so the probe's absence means something.
    const img = document.createElement('img');
    img.src = control;
    document.body.append(img);
    await expect.poll(() => requested(control)).toBe(true);
    expect(requested(probe) || requested(`${probe}?2`)).toBe(false);
    img.remove();
    el.remove();
  });
});
