// Model output is untrusted: it is parsed as Markdown and then sanitized, so a reply containing
// <script>, event-handler attributes or javascript: links can neither run nor insert active markup.
//
// It is hostile to the parser too: marked recurses once per nesting level (a few thousand nested `>` or
// list items overflow the stack, and nested lists cost about depth³), and its emphasis matching is quadratic
// in the `*`/`_` markers of one paragraph. A render that throws breaks the chat element on every later
// update; one that takes seconds freezes the page. So a cheap linear scan sends such text to plain text
// before marked sees it, and anything marked or DOMPurify still throws on falls back to plain text as well.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { escapeHtml, keepOrEscapeHtml } from './raw-html';

const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub',
];

const ALLOWED_ATTR = ['href', 'title', 'start', 'align'];

// Raw HTML in the Markdown that is more than ALLOWED_TAGS with ALLOWED_ATTR shows as text (raw-html.ts).
const marked = new Marked({ renderer: { html: ({ text }) => keepOrEscapeHtml(text, ALLOWED_TAGS, ALLOWED_ATTR) } });

/**
 * Beyond these a text is shown as plain text. At the limits marked takes tens of milliseconds (V8, one core):
 * `nesting` counts block quote and list markers at a line's start plus one level per two columns of
 * indentation; `emphasisCost` is the sum over blank-line-separated stretches of (their `*` and `_` count)².
 */
export const MARKDOWN_LIMITS = { chars: 50_000, nesting: 50, emphasisCost: 250_000 } as const;

export type MarkdownRender = { html: string } | { text: string; why: string };

/** Why `text` must not go to the Markdown parser (too long, too deeply nested, too much emphasis), or null. */
export function markdownHazard(text: string): string | null {
  const lim = MARKDOWN_LIMITS;
  if (text.length > lim.chars) return `it is longer than ${lim.chars} characters`;
  let markers = 0;
  let cost = 0;
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (isBlank(text, start, end)) {
      cost += markers * markers;
      markers = 0;
    } else {
      if (nestingAt(text, start, end) > lim.nesting) return `it is nested more than ${lim.nesting} levels deep`;
      for (let i = start; i < end; i++) if (mayDelimit(text, i)) markers++;
    }
    start = end + 1;
  }
  cost += markers * markers;
  return cost > lim.emphasisCost ? 'it has too many emphasis markers (* or _) in one paragraph' : null;
}

function isBlank(s: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = s[i];
    if (c !== ' ' && c !== '\t' && c !== '\r') return false;
  }
  return true;
}

// A `*` or `_` that can open or close emphasis (CommonMark's flanking rules, loosely): not one between two
// spaces, nor a `_` inside a word (snake_case), which marked skips cheaply.
function mayDelimit(s: string, i: number): boolean {
  const c = s[i];
  if (c !== '*' && c !== '_') return false;
  const before = s[i - 1] ?? ' ';
  const after = s[i + 1] ?? ' ';
  if (/\s/.test(before) && /\s/.test(after)) return false;
  return !(c === '_' && WORD.test(before) && WORD.test(after));
}

const WORD = /[\p{L}\p{N}]/u;

/** Block quote and list markers opening the line, plus a level per two columns of indentation among them. */
function nestingAt(s: string, start: number, end: number): number {
  let markers = 0;
  let columns = 0;
  let i = start;
  const gapAfter = (j: number) => j >= end || s[j] === ' ' || s[j] === '\t' || s[j] === '\r';
  while (i < end) {
    const c = s[i];
    if (c === ' ') columns++;
    else if (c === '\t') columns += 4;
    else if (c === '>') markers++;
    else if ((c === '-' || c === '*' || c === '+') && gapAfter(i + 1)) markers++;
    else if (c >= '0' && c <= '9') {
      let j = i;
      while (j < end && j - i < 10 && s[j] >= '0' && s[j] <= '9') j++;
      if (j - i > 9 || (s[j] !== '.' && s[j] !== ')') || !gapAfter(j + 1)) break;
      markers++;
      i = j;
    } else break;
    i++;
  }
  return markers + (columns >> 1);
}

const parseOptions = { async: false, gfm: true, breaks: false } as const;

/** Sanitized HTML for `text`, or the text itself with the reason it is shown plain. Never throws. */
export function markdownOrText(text: string): MarkdownRender {
  const hit = memo.get(text);
  if (hit) return hit;
  const out = renderOnce(text);
  if (memo.size >= MEMO_SIZE) memo.delete(memo.keys().next().value!);
  memo.set(text, out);
  return out;
}

// The chat re-renders every answer on each update (a streamed token is one): each text is parsed once.
const MEMO_SIZE = 64;
const memo = new Map<string, MarkdownRender>();

function renderOnce(text: string): MarkdownRender {
  const hazard = markdownHazard(text);
  if (hazard) return { text, why: `Shown as plain text: ${hazard}.` };
  try {
    const html = marked.parse(text, parseOptions) as string;
    return { html: DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i }) };
  } catch (e) {
    return { text, why: `Shown as plain text: the Markdown renderer failed (${e instanceof Error ? e.message : String(e)}).` };
  }
}

/**
 * Markdown to sanitized HTML. Images and raw HTML beyond ALLOWED_TAGS / ALLOWED_ATTR show as text; text the
 * parser must not see (markdownHazard) or fails on comes back escaped in a `<pre>`.
 */
export function renderMarkdown(text: string): string {
  const r = markdownOrText(text);
  return 'html' in r ? r.html : `<pre>${escapeHtml(r.text)}</pre>`;
}
