// The web search tool. Web search needs a service and a key that the user supplies, so the tool is a thin
// front over a pluggable provider; the generic JSON provider covers most search APIs by configuration
// (endpoint, how the key is sent, where the results list and its fields are in the JSON). The tool has no
// provider until the user configures one, and as a network tool it is off until the user allows it.
import { WEB_SEARCH_CARD } from './cards';
import { DEFAULT_MAX_RESPONSE_BYTES, fetchJson, ToolHttpError, trimText } from './http-json';
import type { Tool, ToolContext, ToolResult } from './tool';

export interface WebSearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface WebSearchProvider {
  /** Shown in the UI and in errors, e.g. 'json:api.example.com'. */
  readonly name: string;
  search(query: string, maxResults: number, signal: AbortSignal): Promise<WebSearchResult[]>;
}

/** A dotted path into JSON ('web.results', 'items', 'data.0.hits'); a list tries each path in turn. */
export type JsonPath = string | string[];

export interface JsonSearchProviderConfig {
  /** The search endpoint, e.g. https://api.search.example/v1/search. */
  endpoint: string;
  apiKey?: string;
  /** Where the key goes (default 'header'). */
  apiKeyIn?: 'header' | 'query';
  /** Header or query parameter name for the key (default 'Authorization' for a header, 'key' for a query). */
  apiKeyName?: string;
  /** Put before the key in a header (default 'Bearer ' with the Authorization header, else ''). */
  apiKeyPrefix?: string;
  /** GET puts the query in the URL; POST sends a JSON body (default GET). */
  method?: 'GET' | 'POST';
  /** Name of the query field (default 'q'). */
  queryParam?: string;
  /** Name of the result-count field, if the API has one (default none). */
  countParam?: string;
  /** Further fixed fields (e.g. { format: 'json' }). */
  extraParams?: Record<string, string>;
  /** Where the list of results is (default ['results', 'items', 'web.results', 'organic_results']). */
  resultsPath?: JsonPath;
  titlePath?: JsonPath;
  urlPath?: JsonPath;
  snippetPath?: JsonPath;
  /** Bytes read of one response at most (default DEFAULT_MAX_RESPONSE_BYTES, 4 MiB). */
  maxResponseBytes?: number;
}

/** Ready-made settings for some well-known APIs (the user still supplies endpoint and key). */
export const JSON_SEARCH_PRESETS: Record<string, Omit<JsonSearchProviderConfig, 'endpoint' | 'apiKey'> & { endpoint?: string }> = {
  brave: {
    endpoint: 'https://api.search.brave.com/res/v1/web/search',
    apiKeyName: 'X-Subscription-Token',
    apiKeyPrefix: '',
    countParam: 'count',
    resultsPath: 'web.results',
    snippetPath: 'description',
  },
  googleCse: {
    endpoint: 'https://www.googleapis.com/customsearch/v1',
    apiKeyIn: 'query',
    apiKeyName: 'key',
    countParam: 'num',
    resultsPath: 'items',
    urlPath: 'link',
    snippetPath: 'snippet',
  },
  searxng: { apiKeyName: 'Authorization', extraParams: { format: 'json' }, resultsPath: 'results', snippetPath: 'content' },
  tavily: { endpoint: 'https://api.tavily.com/search', method: 'POST', queryParam: 'query', countParam: 'max_results', resultsPath: 'results', snippetPath: 'content' },
};

export function getPath(value: unknown, path: JsonPath): unknown {
  for (const p of Array.isArray(path) ? path : [path]) {
    let cur: unknown = value;
    for (const key of p.split('.').filter(Boolean)) {
      if (cur === null || typeof cur !== 'object') {
        cur = undefined;
        break;
      }
      cur = (cur as Record<string, unknown>)[key];
    }
    if (cur !== undefined) return cur;
  }
  return undefined;
}

function pathText(path: JsonPath): string {
  return (Array.isArray(path) ? path : [path]).map((p) => `'${p}'`).join(' or ');
}

export class JsonSearchProvider implements WebSearchProvider {
  readonly name: string;
  private readonly cfg: JsonSearchProviderConfig;

  constructor(config: JsonSearchProviderConfig) {
    let u: URL;
    try {
      u = new URL(config.endpoint);
    } catch {
      throw new Error(`web search: endpoint ${JSON.stringify(config.endpoint)} is not an absolute URL`);
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error(`web search: endpoint must be http(s), got ${u.protocol}`);
    this.cfg = config;
    this.name = `json:${u.host}`;
  }

  async search(query: string, maxResults: number, signal: AbortSignal): Promise<WebSearchResult[]> {
    const c = this.cfg;
    const fields: Record<string, string> = { ...(c.extraParams ?? {}), [c.queryParam ?? 'q']: query };
    if (c.countParam) fields[c.countParam] = String(maxResults);
    const headers: Record<string, string> = { accept: 'application/json' };
    const url = new URL(c.endpoint);
    const keyIn = c.apiKeyIn ?? 'header';
    if (c.apiKey) {
      if (keyIn === 'query') url.searchParams.set(c.apiKeyName ?? 'key', c.apiKey);
      else {
        const name = c.apiKeyName ?? 'Authorization';
        const prefix = c.apiKeyPrefix ?? (name.toLowerCase() === 'authorization' ? 'Bearer ' : '');
        headers[name] = prefix + c.apiKey;
      }
    }
    let init: RequestInit & { signal: AbortSignal };
    if ((c.method ?? 'GET') === 'POST') {
      headers['content-type'] = 'application/json';
      const body: Record<string, unknown> = { ...fields };
      if (c.countParam) body[c.countParam] = maxResults;
      init = { method: 'POST', headers, body: JSON.stringify(body), signal };
    } else {
      for (const [k, v] of Object.entries(fields)) url.searchParams.set(k, v);
      init = { method: 'GET', headers, signal };
    }
    const label = `web_search (${this.name})`;
    const data = await fetchJson(label, url.href, init, c.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
    const resultsPath = c.resultsPath ?? ['results', 'items', 'web.results', 'organic_results'];
    const list = getPath(data, resultsPath);
    if (list === undefined) {
      // Many APIs answer an empty search by leaving the list out; an error object says otherwise.
      const err = getPath(data, ['error.message', 'error', 'message', 'detail']);
      if (err !== undefined) throw new ToolHttpError(`${label}: the service refused the search: ${typeof err === 'string' ? err : JSON.stringify(err)}`, 'http');
      return [];
    }
    if (!Array.isArray(list)) throw new ToolHttpError(`${label}: ${pathText(resultsPath)} in the response is not a list; check the result path setting`, 'json');
    const out: WebSearchResult[] = [];
    for (const item of list) {
      const title = getPath(item, c.titlePath ?? ['title', 'name']);
      const link = getPath(item, c.urlPath ?? ['url', 'link', 'href']);
      const snippet = getPath(item, c.snippetPath ?? ['snippet', 'description', 'content', 'body']);
      if (typeof link !== 'string' || !link) continue;
      out.push({ title: typeof title === 'string' ? title : link, url: link, snippet: typeof snippet === 'string' ? snippet : '' });
      if (out.length >= maxResults) break;
    }
    return out;
  }
}

export interface WebSearchToolOptions {
  provider?: WebSearchProvider;
  /** Characters kept from each snippet (default 400). */
  maxSnippetChars?: number;
}

export class WebSearchTool implements Tool {
  readonly card = WEB_SEARCH_CARD;
  private provider: WebSearchProvider | undefined;
  private readonly maxSnippetChars: number;

  constructor(options: WebSearchToolOptions = {}) {
    this.provider = options.provider;
    this.maxSnippetChars = options.maxSnippetChars ?? 400;
  }

  /** Sets or clears the provider (the user's endpoint and key). */
  configure(provider: WebSearchProvider | undefined): void {
    this.provider = provider;
  }

  get configured(): boolean {
    return this.provider !== undefined;
  }

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    if (!this.provider) {
      return { ok: false, output: '', error: 'web_search is not set up: the user has to enter a search endpoint and API key in the tool settings. Use another tool.' };
    }
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (!query) return { ok: false, output: '', error: "web_search: field 'query' must be a non-empty search phrase" };
    const n = Math.max(1, Math.min(10, typeof args.max_results === 'number' ? Math.trunc(args.max_results) : 5));
    try {
      const results = await this.provider.search(query, n, ctx.signal);
      if (!results.length) return { ok: true, output: `No web results found for "${query}".` };
      const output = results
        .slice(0, n)
        .map((r, i) => `[${i + 1}] ${r.title.trim()}\n${r.url}\n${trimText(r.snippet.replace(/<[^>]*>/g, ''), this.maxSnippetChars)}`.trimEnd())
        .join('\n\n');
      return { ok: true, output };
    } catch (e) {
      return { ok: false, output: '', error: e instanceof Error ? e.message : String(e) };
    }
  }
}
