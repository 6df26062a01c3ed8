// The Wikipedia tool: MediaWiki's action API, called from the page with `origin=*` (anonymous CORS).
// Step 1 searches (list=search); step 2 fetches the plain-text introductions (prop=extracts) of the top
// hits in one request. When the search finds nothing but MediaWiki suggests a spelling, the suggestion is
// tried once: small models often misspell names.
import { WIKIPEDIA_CARD } from './cards';
import { DEFAULT_MAX_RESPONSE_BYTES, fetchJson, ToolHttpError, trimText } from './http-json';
import type { Tool, ToolContext, ToolResult } from './tool';

export const DEFAULT_WIKIPEDIA_API = 'https://en.wikipedia.org/w/api.php';

export interface WikipediaToolOptions {
  /** The api.php endpoint (default English Wikipedia). Any MediaWiki with TextExtracts works. */
  apiUrl?: string;
  /** Characters kept from each article's introduction (default 1,200). */
  maxCharsPerArticle?: number;
  /** Articles when the call does not say (default 3); calls may ask for 1 to 5. */
  defaultResults?: number;
  /** Bytes read of one API response at most (default DEFAULT_MAX_RESPONSE_BYTES, 4 MiB). */
  maxResponseBytes?: number;
}

export interface WikipediaArticle {
  title: string;
  url: string;
  text: string;
}

interface SearchResponse {
  error?: { code?: string; info?: string };
  query?: { searchinfo?: { totalhits?: number; suggestion?: string }; search?: Array<{ pageid?: number; title?: string; snippet?: string }> };
}

interface ExtractsResponse {
  error?: { code?: string; info?: string };
  query?: { pages?: Array<{ pageid?: number; title?: string; extract?: string; fullurl?: string; missing?: boolean }> };
}

const MAX_RESULTS = 5;

export class WikipediaTool implements Tool {
  readonly card = WIKIPEDIA_CARD;
  readonly apiUrl: string;
  private readonly maxChars: number;
  private readonly defaultResults: number;
  private readonly maxResponseBytes: number;

  constructor(options: WikipediaToolOptions = {}) {
    this.apiUrl = options.apiUrl ?? DEFAULT_WIKIPEDIA_API;
    try {
      new URL(this.apiUrl);
    } catch {
      throw new Error(`wikipedia tool: apiUrl ${JSON.stringify(this.apiUrl)} is not an absolute URL`);
    }
    this.maxChars = options.maxCharsPerArticle ?? 1200;
    this.defaultResults = options.defaultResults ?? 3;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (!query) return { ok: false, output: '', error: "wikipedia: field 'query' must be a non-empty search phrase" };
    const n = Math.max(1, Math.min(MAX_RESULTS, typeof args.max_results === 'number' ? Math.trunc(args.max_results) : this.defaultResults));
    try {
      let usedQuery = query;
      let hits = await this.search(query, n, ctx.signal);
      if (hits.results.length === 0 && hits.suggestion && hits.suggestion.toLowerCase() !== query.toLowerCase()) {
        usedQuery = hits.suggestion;
        hits = await this.search(usedQuery, n, ctx.signal);
      }
      if (hits.results.length === 0) {
        return { ok: true, output: `No Wikipedia articles found for "${query}". Try fewer or different keywords, or the exact name.` };
      }
      const articles = await this.extracts(hits.results, ctx.signal);
      const head = usedQuery === query ? '' : `No results for "${query}"; showing results for "${usedQuery}".\n\n`;
      return { ok: true, output: head + formatArticles(articles) };
    } catch (e) {
      return { ok: false, output: '', error: e instanceof Error ? e.message : String(e) };
    }
  }

  /** Searches and returns the top hits in rank order. */
  async search(query: string, n: number, signal: AbortSignal): Promise<{ results: Array<{ pageid: number; title: string; snippet: string }>; suggestion?: string }> {
    const url = this.url({ action: 'query', list: 'search', srsearch: query, srlimit: String(n), srprop: 'snippet', srinfo: 'suggestion|totalhits' });
    const data = (await this.get(url, signal)) as SearchResponse;
    const list = data.query?.search;
    if (!Array.isArray(list)) throw new ToolHttpError(`wikipedia: unexpected search response from ${this.apiUrl} (no query.search list)`, 'json');
    const results = list
      .filter((r) => typeof r.pageid === 'number' && typeof r.title === 'string')
      .slice(0, n)
      .map((r) => ({ pageid: r.pageid as number, title: r.title as string, snippet: stripHtml(r.snippet ?? '') }));
    return { results, suggestion: data.query?.searchinfo?.suggestion };
  }

  /** The plain-text introductions of `hits`, in the hits' order. */
  async extracts(hits: Array<{ pageid: number; title: string; snippet: string }>, signal: AbortSignal): Promise<WikipediaArticle[]> {
    const url = this.url({
      action: 'query',
      prop: 'extracts|info',
      inprop: 'url',
      exintro: '1',
      explaintext: '1',
      exlimit: String(hits.length),
      pageids: hits.map((h) => h.pageid).join('|'),
    });
    const data = (await this.get(url, signal)) as ExtractsResponse;
    const pages = data.query?.pages;
    if (!Array.isArray(pages)) throw new ToolHttpError(`wikipedia: unexpected extracts response from ${this.apiUrl} (no query.pages list)`, 'json');
    const byId = new Map(pages.map((p) => [p.pageid, p]));
    const out: WikipediaArticle[] = [];
    for (const h of hits) {
      const p = byId.get(h.pageid);
      if (p?.missing) continue;
      // The search snippet stands in where an extract is missing (e.g. a page without an introduction).
      const text = p?.extract?.trim() ? p.extract : h.snippet;
      out.push({ title: p?.title ?? h.title, url: p?.fullurl ?? this.articleUrl(h.title), text: trimText(text, this.maxChars) });
    }
    return out;
  }

  private url(params: Record<string, string>): string {
    const u = new URL(this.apiUrl);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    u.searchParams.set('format', 'json');
    u.searchParams.set('formatversion', '2');
    u.searchParams.set('utf8', '1');
    // Anonymous cross-origin request: no cookies, allowed by MediaWiki for any origin.
    u.searchParams.set('origin', '*');
    return u.href;
  }

  private async get(url: string, signal: AbortSignal): Promise<unknown> {
    const data = await fetchJson('wikipedia', url, { signal, headers: { accept: 'application/json' } }, this.maxResponseBytes);
    if (!data || typeof data !== 'object') throw new ToolHttpError(`wikipedia: ${this.apiUrl} returned JSON that is not an object`, 'json');
    const err = (data as { error?: { code?: string; info?: string } }).error;
    if (err) throw new ToolHttpError(`wikipedia: the API refused the request: ${err.code ?? 'error'}: ${err.info ?? 'no details'}`, 'http');
    return data;
  }

  private articleUrl(title: string): string {
    const u = new URL(this.apiUrl);
    return `${u.origin}/wiki/${encodeURIComponent(title.replace(/ /g, '_'))}`;
  }
}

export function formatArticles(articles: WikipediaArticle[]): string {
  return articles.map((a, i) => `[${i + 1}] ${a.title}\n${a.url}\n${a.text}`).join('\n\n');
}

/** Search snippets carry <span class="searchmatch"> markup and HTML entities. */
function stripHtml(s: string): string {
  return s
    .replace(/<[^>]*>/g, '')
    .replace(/&quot;/g, '"')
    .replace(/&#0?39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
