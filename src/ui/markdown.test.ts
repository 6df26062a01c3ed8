// The Markdown renderer on hostile text, in Node: DOMPurify needs a DOM, so it is stood in for here by a
// pass-through (its sanitizing is the browser tests' business); what is tested is what reaches marked.
import { describe, expect, it, vi } from 'vitest';

const sanitize = vi.hoisted(() => vi.fn((html: string) => html));
vi.mock('dompurify', () => ({ default: { sanitize } }));

const { MARKDOWN_LIMITS, markdownHazard, markdownOrText, renderMarkdown } = await import('./markdown');
const { acceptedShapes, refusedShapes } = await import('../../tests/support/markdown-shapes');

const nestedList = (depth: number, indent = '  ') => Array.from({ length: depth }, (_, i) => `${indent.repeat(i)}- item ${i}`).join('\n');

/** The render of `text` and how long it took. */
function timed(text: string) {
  const t0 = performance.now();
  const r = markdownOrText(text);
  return { r, ms: performance.now() - t0 };
}

describe('renderMarkdown on hostile text', () => {
  it('renders ordinary Markdown', () => {
    const html = renderMarkdown('# Title\n\nSome **bold** text.\n\n- a\n  - b\n\n> quoted\n\n```py\ndef f(a_b):\n    return a_b * 2\n```');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<blockquote>');
    expect(html).toMatch(/<ul>\s*<li>a\s*<ul>/);
    expect(markdownHazard(nestedList(20))).toBeNull();
  });

  it('shows 3000 nested block quotes as plain text, at once (marked overflows the stack on them)', () => {
    const text = `${'>'.repeat(3000)} deep`;
    const { r, ms } = timed(text);
    expect(r).toEqual({ text, why: `Shown as plain text: it is nested more than ${MARKDOWN_LIMITS.nesting} levels deep.` });
    expect(ms).toBeLessThan(50);
    expect(renderMarkdown(`${'> '.repeat(3000)}<b>x</b>`)).toBe(`<pre>${'&gt; '.repeat(3000)}&lt;b&gt;x&lt;/b&gt;</pre>`);
  });

  it('shows a list nested 1000 deep as plain text, at once (marked takes seconds on it)', () => {
    for (const text of [nestedList(1000), `${'- '.repeat(1000)}x`, nestedList(60, '    ')]) {
      const { r, ms } = timed(text);
      expect('text' in r && r.text).toBe(text);
      expect(ms).toBeLessThan(50);
    }
    expect(markdownHazard(nestedList(1000))).toMatch(/longer than/);
    expect(markdownHazard(`${'- '.repeat(1000)}x`)).toMatch(/nested more than 50 levels/);
  });

  it('shows a paragraph of thousands of emphasis markers as plain text (marked is quadratic in them)', () => {
    for (const text of ['*a '.repeat(2000) + 'b*'.repeat(2000), '*a_'.repeat(5000), `${'*'.repeat(5000)}x${'*'.repeat(5000)}`]) {
      const { r, ms } = timed(text);
      expect(r).toEqual({ text, why: 'Shown as plain text: it has too many emphasis markers (* or _) in one paragraph.' });
      expect(ms).toBeLessThan(50);
    }
    // Markers in separate paragraphs, inside words or between spaces cost marked little and are not counted.
    expect(markdownHazard('**bold** and *em*\n\n'.repeat(300))).toBeNull();
    expect(markdownHazard('snake_case_name '.repeat(2000))).toBeNull();
    expect(markdownHazard('a * b '.repeat(2000))).toBeNull();
  });

  it('falls back to plain text when the renderer throws anyway', () => {
    sanitize.mockImplementationOnce(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    expect(markdownOrText('fine *text* (1)')).toEqual({ text: 'fine *text* (1)', why: 'Shown as plain text: the Markdown renderer failed (Maximum call stack size exceeded).' });
  });
});

describe('renderMarkdown on text whose HTML would dwarf it', () => {
  // marked builds header columns × rows cells however short the rows, and repeats a reference's address at
  // each use: a few KB became millions of elements or tens of MB of HTML, seconds on the page's thread.
  const opening = (html: string) => html.match(/<[a-z]/gi)?.length ?? 0;

  it('renders the worst shapes within the limits as Markdown, no bigger than the limits', () => {
    for (const { name, text } of acceptedShapes(MARKDOWN_LIMITS)) {
      const r = markdownOrText(text);
      expect('html' in r ? { name } : { name, why: r.why }).toEqual({ name });
      const html = 'html' in r ? r.html : '';
      expect(opening(html), name).toBeLessThanOrEqual(MARKDOWN_LIMITS.elements);
      expect(html.length, name).toBeLessThanOrEqual(MARKDOWN_LIMITS.htmlChars);
    }
  });

  it('shows huge tables, repeated long references and too many elements as plain text, saying why', () => {
    for (const { name, text, why } of refusedShapes(MARKDOWN_LIMITS)) {
      const r = markdownOrText(text);
      expect('text' in r && r.text === text, name).toBe(true);
      expect('why' in r ? r.why : '', name).toMatch(why);
    }
    // Ordinary tables and references are Markdown.
    expect(renderMarkdown('| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 |\n\nSee [the docs][d], [d] and [D][].\n\n[d]: https://example.com/docs "Docs"')).toMatch(
      /<td align="center"><\/td>[\s\S]*(<a href="https:\/\/example.com\/docs" title="Docs">[\s\S]*){3}/,
    );
  });

  it('shows an image as its alt text and address, as text', () => {
    expect(renderMarkdown('A cat: ![a *black* cat](https://example.com/cat.png "Cat") and ![](u) and ![x][r]\n\n[r]: https://example.com/<r>.png')).toBe(
      '<p>A cat: a black cat (image: https://example.com/cat.png) and (image: u) and x (image: https://example.com/&lt;r&gt;.png)</p>\n',
    );
  });
});
