// Model output is untrusted: it is parsed as Markdown and then sanitized, so a reply containing
// <script>, event-handler attributes or javascript: links can neither run nor insert active markup.
//
// It is hostile to the parser too: marked recurses once per nesting level (a few thousand nested `>` or
// list items overflow the stack, and nested lists cost about depth³), and its emphasis matching is quadratic
// in the `*`/`_` markers of one paragraph. A render that throws breaks the chat element on every later
// update; one that takes seconds freezes the page. So a cheap linear scan sends such text to plain text
// before marked sees it, and anything marked or DOMPurify still throws on falls back to plain text as well.
//
// Its output can also dwarf its input, and DOMPurify and the page then spend tens of µs on each element:
// a table has header columns × rows cells however short its rows are (a few KB of `|` is a million cells),
// and a reference link repeats its definition's address at every use (`[a]: <20 KB>` then `[a]` × 9000 is
// 90 MB of HTML). The scan bounds table cells before marked builds them, the tokens bound what references
// expand to before they are rendered, and HTML with too many elements or characters never reaches DOMPurify.
import DOMPurify from 'dompurify';
import { Marked, type Token, type Tokens } from 'marked';
import { escapeHtml, keepOrEscapeHtml } from './raw-html';

const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub',
];

const ALLOWED_ATTR = ['href', 'title', 'start', 'align'];

// Raw HTML in the Markdown that is more than ALLOWED_TAGS with ALLOWED_ATTR shows as text (raw-html.ts). An
// image shows as its alt text and address, as text: the page never fetches what a model points it at.
const marked = new Marked({
  async: false,
  gfm: true,
  breaks: false,
  renderer: {
    html: ({ text }) => keepOrEscapeHtml(text, ALLOWED_TAGS, ALLOWED_ATTR),
    image(token: Tokens.Image) {
      const alt = token.tokens ? this.parser.parseInline(token.tokens, this.parser.textRenderer) : token.text;
      return `${escapeHtml(alt)}${alt ? ' ' : ''}(image: ${escapeHtml(token.href)})`;
    },
  },
});

/**
 * Beyond these a text is shown as plain text. `nesting` counts block quote and list markers at a line's start
 * plus one level per two columns of indentation; `emphasisCost` is the sum over blank-line-separated
 * stretches of (their `*` and `_` count)². `tableCells` bounds the cells of all tables, each counted as
 * delimiter-row columns × (rows + 2), a row being any line up to the next blank one; `linkExpansion` the
 * characters links and images add beyond the text that wrote them (a reference's address and title at each
 * use); `elements` and `htmlChars` marked's output, its opening tags and its length. The first two of those
 * four keep marked from building what the last two would refuse. The worst text within all of them took
 * 0.4 s to show in headless Chromium on a busy 2-core machine (bench/markdown-render.ts).
 */
export const MARKDOWN_LIMITS = {
  chars: 50_000,
  nesting: 50,
  emphasisCost: 250_000,
  tableCells: 3_000,
  linkExpansion: 100_000,
  elements: 5_000,
  htmlChars: 500_000,
} as const;

export type MarkdownRender = { html: string } | { text: string; why: string };

/**
 * Why `text` must not go to the Markdown parser (too long, too deeply nested, too much emphasis, too many
 * table cells), or null.
 */
export function markdownHazard(text: string): string | null {
  const lim = MARKDOWN_LIMITS;
  if (text.length > lim.chars) return `it is longer than ${lim.chars} characters`;
  // marked reads a lone \r as a line break too: a table written with them is as many rows.
  if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
  let markers = 0;
  let cost = 0;
  let cells = 0;
  let columns = 0; // of the table these lines may be rows of; 0 outside one
  let prevBlank = true;
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
    if (endsTable(text, start, end)) {
      columns = 0;
      prevBlank = true;
    } else {
      const delimiterColumns = prevBlank ? 0 : tableDelimiterColumns(text, start, end);
      // The header's cells and this row's (were it a row of an earlier table, which ends only at a blank line).
      if (delimiterColumns) cells += delimiterColumns;
      columns = Math.max(columns, delimiterColumns);
      cells += columns;
      if (cells > lim.tableCells) return `its tables have more than ${lim.tableCells} cells`;
      prevBlank = false;
    }
    start = end + 1;
  }
  cost += markers * markers;
  return cost > lim.emphasisCost ? 'it has too many emphasis markers (* or _) in one paragraph' : null;
}

// Only a line of spaces, or a quoted one (a table may sit in a block quote), surely ends a table: marked
// takes a line of a tab, a no-break space or a form feed for one more row.
function endsTable(s: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (s[i] !== ' ' && s[i] !== '>') return false;
  return true;
}

/**
 * The columns of a GFM table whose delimiter row (`|---|:-:|`) `s[start, end)` may be, else 0. Loose on
 * purpose (the header's cells must match it, so it alone says how wide the table is): after any `>` quote
 * markers, a line of only `|`, `:`, `-` and blanks with a `-` and a `|` or `:` counts.
 */
function tableDelimiterColumns(s: string, start: number, end: number): number {
  let pipes = 0;
  let dash = false;
  let colon = false;
  let first = -1;
  let last = -1;
  while (start < end && (s[start] === ' ' || s[start] === '\t' || s[start] === '>')) start++;
  for (let i = start; i < end; i++) {
    const c = s[i];
    if (c === '|') pipes++;
    else if (c === '-') dash = true;
    else if (c === ':') colon = true;
    else if (c !== ' ' && c !== '\t') return 0;
    if (c !== ' ' && c !== '\t') {
      if (first < 0) first = i;
      last = i;
    }
  }
  if (!dash || (!pipes && !colon)) return 0;
  const edges = (s[first] === '|' ? 1 : 0) + (last !== first && s[last] === '|' ? 1 : 0);
  return Math.max(1, pipes - edges + 1);
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
  const lim = MARKDOWN_LIMITS;
  const plain = (why: string) => ({ text, why: `Shown as plain text: ${why}.` });
  const hazard = markdownHazard(text);
  if (hazard) return plain(hazard);
  try {
    const tokens = marked.lexer(text);
    if (linkExpansion(tokens) > lim.linkExpansion) return plain(`its links repeat more than ${lim.linkExpansion} characters of addresses`);
    const html = marked.parser(tokens);
    // What the page pays for is elements: ordinary Markdown at the length limit makes under a thousand (the
    // README's first 50 000 characters: 686), but 25 000 one-line list items take about a second to show.
    if (openingTags(html) > lim.elements) return plain(`it would make more than ${lim.elements} HTML elements`);
    if (html.length > lim.htmlChars) return plain(`its HTML would be longer than ${lim.htmlChars} characters`);
    return { html: DOMPurify.sanitize(html, { ALLOWED_TAGS, ALLOWED_ATTR, ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i }) };
  } catch (e) {
    return plain(`the Markdown renderer failed (${e instanceof Error ? e.message : String(e)})`);
  }
}

/** `<` followed by a letter: marked escapes every other `<`, so these are the elements DOMPurify would build. */
function openingTags(html: string): number {
  let n = 0;
  for (let i = html.indexOf('<'); i >= 0; i = html.indexOf('<', i + 1)) {
    const c = html.charCodeAt(i + 1) | 0x20;
    if (c >= 0x61 && c <= 0x7a) n++;
  }
  return n;
}

/** Characters links and images render beyond their source: a reference's address and title at each use. */
function linkExpansion(tokens: Token[]): number {
  let added = 0;
  marked.walkTokens(tokens, (t) => {
    if (t.type === 'link' || t.type === 'image') added += Math.max(0, t.href.length + (t.title?.length ?? 0) - t.raw.length);
  });
  return added;
}

/**
 * Markdown to sanitized HTML. Images and raw HTML beyond ALLOWED_TAGS / ALLOWED_ATTR show as text; text the
 * parser must not see (markdownHazard) or fails on comes back escaped in a `<pre>`.
 */
export function renderMarkdown(text: string): string {
  const r = markdownOrText(text);
  return 'html' in r ? r.html : `<pre>${escapeHtml(r.text)}</pre>`;
}
