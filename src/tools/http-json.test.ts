import { describe, expect, it } from 'vitest';
import { redactUrl, trimText } from './http-json';

describe('trimText', () => {
  it('keeps short text, cuts at a sentence end, else at a word, and marks the cut', () => {
    expect(trimText('  Short   text. ', 50)).toBe('Short text.');
    const s = 'First sentence here. Second sentence is longer than the limit allows';
    expect(trimText(s, 36)).toBe('First sentence here. …');
    // A sentence end in the first half of the budget would waste it: cut at a word instead.
    expect(trimText(s, 44)).toBe('First sentence here. Second sentence is …');
    expect(trimText('one two three four five six seven', 20)).toBe('one two three four …');
    expect(trimText('x'.repeat(30), 10)).toBe(`${'x'.repeat(10)} …`);
  });
});

describe('redactUrl', () => {
  it('drops the query string, which may hold an API key', () => {
    expect(redactUrl('https://api.example.com/v1/search?q=a&key=SECRET')).toBe('https://api.example.com/v1/search');
    expect(redactUrl('not a url?key=SECRET')).toBe('not a url');
  });
});
