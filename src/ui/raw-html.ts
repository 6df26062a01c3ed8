// Raw HTML a model writes inside its Markdown reaches an HTML parser only when it is nothing but tags the
// sanitizer keeps, with attributes it keeps; anything else is shown as text. DOMPurify would strip an
// `onerror=` anyway, but the browser parses the markup first and, under the page's Content-Security-Policy,
// logs an error for every inline event handler it meets, even in the inert document DOMPurify parses into.
// So handlers never get that far. DOMPurify stays the security boundary: this only decides what is text.

const SEGMENT = /<[^>]*>?/g;
const TAG = /^<\/?([A-Za-z][A-Za-z0-9]*)((?:\s+[A-Za-z][\w-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*\/?>$/;
const ATTR = /([A-Za-z][\w-]*)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?/g;

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** True when every tag in `raw` is one of `tags` with only `attrs` (no comments, no other markup). */
export function isPlainAllowedHtml(raw: string, tags: readonly string[], attrs: readonly string[]): boolean {
  const okTags = new Set(tags.map((t) => t.toLowerCase()));
  const okAttrs = new Set(attrs.map((a) => a.toLowerCase()));
  for (const [segment] of raw.matchAll(SEGMENT)) {
    const m = TAG.exec(segment);
    if (!m || !okTags.has(m[1].toLowerCase())) return false;
    for (const [, name] of m[2].matchAll(ATTR)) if (!okAttrs.has(name.toLowerCase())) return false;
  }
  return true;
}

/** `raw` as it is when isPlainAllowedHtml, else escaped so it shows as the text the model wrote. */
export function keepOrEscapeHtml(raw: string, tags: readonly string[], attrs: readonly string[]): string {
  return isPlainAllowedHtml(raw, tags, attrs) ? raw : escapeHtml(raw);
}
