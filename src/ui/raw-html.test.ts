import { describe, expect, it } from 'vitest';
import { escapeHtml, isPlainAllowedHtml, keepOrEscapeHtml } from './raw-html';

const TAGS = ['p', 'br', 'a', 'strong', 'sup'];
const ATTRS = ['href', 'title'];

describe('raw HTML in model output', () => {
  it('keeps tags the sanitizer keeps, with the attributes it keeps', () => {
    expect(isPlainAllowedHtml('<br>', TAGS, ATTRS)).toBe(true);
    expect(isPlainAllowedHtml('<sup>2</sup>', TAGS, ATTRS)).toBe(true);
    expect(isPlainAllowedHtml('<a href="https://example.org" title=\'x y\'>ok</a>', TAGS, ATTRS)).toBe(true);
    // Conservative: a '>' inside a value ends the tag as far as this check goes, so it shows as text.
    expect(isPlainAllowedHtml('<a title="x > y">ok</a>', TAGS, ATTRS)).toBe(false);
    expect(isPlainAllowedHtml('<P>text<BR/></P>', TAGS, ATTRS)).toBe(true);
  });

  it('turns into text anything with an event handler, another tag, a comment or broken markup', () => {
    for (const raw of [
      '<img src=x onerror="alert(1)">',
      '<a href="https://example.org" onclick="alert(1)">ok</a>',
      '<a/onclick=alert(1)>x</a>',
      '<a href="x"onclick="y">z</a>',
      '<strong title=\'">\' onmouseover="alert(1)">',
      '<script>alert(1)</script>',
      '<!-- <img src=x onerror=alert(1)> -->',
      '<p>unclosed <a href="x" onclick="y"',
      '<svg><g onload="alert(1)"></g></svg>',
    ]) {
      expect(isPlainAllowedHtml(raw, TAGS, ATTRS)).toBe(false);
      expect(keepOrEscapeHtml(raw, TAGS, ATTRS)).not.toMatch(/<[a-z!]/i);
    }
    expect(keepOrEscapeHtml('<img src=x onerror="a&b">', TAGS, ATTRS)).toBe('&lt;img src=x onerror=&quot;a&amp;b&quot;&gt;');
    expect(escapeHtml(`'`)).toBe('&#39;');
  });
});
