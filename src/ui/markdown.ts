// Model output is untrusted: it is parsed as Markdown and then sanitized, so a reply containing
// <script>, event-handler attributes or javascript: links can neither run nor insert active markup.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { keepOrEscapeHtml } from './raw-html';

const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'em', 'strong', 'del', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span', 'sup', 'sub',
];

const ALLOWED_ATTR = ['href', 'title', 'start', 'align'];

// Raw HTML in the Markdown that is more than ALLOWED_TAGS with ALLOWED_ATTR shows as text (raw-html.ts).
const marked = new Marked({ renderer: { html: ({ text }) => keepOrEscapeHtml(text, ALLOWED_TAGS, ALLOWED_ATTR) } });

/** Markdown to sanitized HTML. Images and raw HTML beyond ALLOWED_TAGS / ALLOWED_ATTR show as text. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false, gfm: true, breaks: false }) as string;
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  });
}
