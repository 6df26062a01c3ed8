// The web search tool's generic JSON provider against a local search API.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getPath, JsonSearchProvider, WebSearchTool } from './web-search';
import { ToolRegistry } from './registry';

interface Seen {
  path: string;
  params: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}
let server: Server;
let base = '';
const seen: Seen[] = [];
const KEY = 'sk-test-7f3a';

// A search service in the shape of Brave's API (results under web.results, snippet in description).
const RESULTS = {
  type: 'search',
  query: { original: 'tour de france winner' },
  web: {
    type: 'search',
    results: [
      { title: 'Tour de France 2024 - Wikipedia', url: 'https://en.wikipedia.org/wiki/2024_Tour_de_France', description: 'The <strong>2024 Tour de France</strong> was won by Tadej Pogačar.' },
      { title: 'No URL here', description: 'skipped' },
      { title: 'Official site', url: 'https://www.letour.fr/en/', description: 'x'.repeat(1000) },
      { title: 'Third', url: 'https://example.org/3', description: 'third' },
    ],
  },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://x');
      seen.push({ path: u.pathname, params: u.searchParams, headers: req.headers, body });
      const send = (status: number, text: string, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type });
        res.end(text);
      };
      if (u.pathname === '/brave') {
        if (req.headers['x-subscription-token'] !== KEY) return send(401, '{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID"}}');
        return send(200, JSON.stringify(RESULTS));
      }
      if (u.pathname === '/post') return send(200, JSON.stringify({ answer: null, results: [{ title: 'T', url: 'https://t.example/', content: `echo ${JSON.parse(body).query}` }] }));
      if (u.pathname === '/empty') return send(200, JSON.stringify({ web: { results: [] } }));
      if (u.pathname === '/nolist') return send(200, JSON.stringify({ query: 'x' }));
      if (u.pathname === '/refused') return send(200, JSON.stringify({ error: { message: 'quota exceeded' } }));
      if (u.pathname === '/notalist') return send(200, JSON.stringify({ results: { a: 1 } }));
      if (u.pathname === '/huge') {
        // 5 MiB of results, written in pieces (no content-length): only counting while reading catches it.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"results": [');
        const item = JSON.stringify({ title: 't', url: 'https://x.example/', content: 'y'.repeat(1000) });
        for (let i = 0; i < 5 * 1024; i++) res.write(`${i ? ',' : ''}${item}`);
        return void res.end(']}');
      }
      if (u.pathname === '/garbage') return send(200, '<html>captcha</html>', 'text/html');
      send(404, 'nope', 'text/plain');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const ctx = () => ({ signal: new AbortController().signal, timeoutMs: 5000 });
const brave = (apiKey = KEY) =>
  new JsonSearchProvider({ endpoint: `${base}/brave`, apiKey, apiKeyName: 'X-Subscription-Token', countParam: 'count', resultsPath: 'web.results', snippetPath: 'description' });

describe('web search tool', () => {
  it('is off by default: a network tool, not configured, refused by the registry until allowed', async () => {
    const tool = new WebSearchTool();
    expect(tool.card.usesNetwork).toBe(true);
    expect(tool.configured).toBe(false);
    expect((await tool.run({ query: 'x' }, ctx())).error).toMatch(/web_search is not set up/);
    const reg = new ToolRegistry();
    reg.register(new WebSearchTool({ provider: brave() }));
    expect((await reg.run('web_search', { query: 'x' }, ctx())).error).toMatch(/uses the network/);
    expect(seen).toHaveLength(0);
  });

  it('sends the key and query as configured and formats the results found at the result path', async () => {
    seen.length = 0;
    const tool = new WebSearchTool({ provider: brave(), maxSnippetChars: 100 });
    const r = await tool.run({ query: 'tour de france winner', max_results: 3 }, ctx());
    expect(seen).toHaveLength(1);
    expect(seen[0].headers['x-subscription-token']).toBe(KEY);
    expect(seen[0].params.get('q')).toBe('tour de france winner');
    expect(seen[0].params.get('count')).toBe('3');
    expect(r.ok).toBe(true);
    const parts = r.output.split('\n\n');
    expect(parts).toHaveLength(3);
    expect(parts[0]).toBe('[1] Tour de France 2024 - Wikipedia\nhttps://en.wikipedia.org/wiki/2024_Tour_de_France\nThe 2024 Tour de France was won by Tadej Pogačar.');
    // The item without a URL is skipped; the long snippet is cut.
    expect(parts[1].startsWith('[2] Official site\nhttps://www.letour.fr/en/\nxxxx')).toBe(true);
    expect(parts[1].split('\n')[2].length).toBeLessThanOrEqual(102);
    expect(parts[2]).toBe('[3] Third\nhttps://example.org/3\nthird');
  });

  it('POSTs a JSON body when configured, with the key as a bearer token', async () => {
    seen.length = 0;
    const p = new JsonSearchProvider({ endpoint: `${base}/post`, apiKey: KEY, method: 'POST', queryParam: 'query', countParam: 'max_results' });
    const r = await new WebSearchTool({ provider: p }).run({ query: 'hello', max_results: 2 }, ctx());
    expect(JSON.parse(seen[0].body)).toEqual({ query: 'hello', max_results: 2 });
    expect(seen[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(r).toEqual({ ok: true, output: '[1] T\nhttps://t.example/\necho hello' });
  });

  it('reports no results, a refused search, a wrong result path, an HTTP error and non-JSON clearly', async () => {
    const tool = (path: string, extra: object = {}) => new WebSearchTool({ provider: new JsonSearchProvider({ endpoint: `${base}${path}`, ...extra }) });
    expect(await tool('/empty').run({ query: 'q' }, ctx())).toEqual({ ok: true, output: 'No web results found for "q".' });
    expect(await tool('/nolist').run({ query: 'q' }, ctx())).toEqual({ ok: true, output: 'No web results found for "q".' });
    expect((await tool('/refused').run({ query: 'q' }, ctx())).error).toMatch(/the service refused the search: quota exceeded/);
    expect((await tool('/notalist').run({ query: 'q' }, ctx())).error).toMatch(/'results' or 'items' .* is not a list; check the result path setting/);
    const unauthorized = await new WebSearchTool({ provider: brave('wrong-key') }).run({ query: 'q' }, ctx());
    expect(unauthorized.error).toMatch(new RegExp(`^web_search \\(json:127.0.0.1:\\d+\\): ${base}/brave answered HTTP 401`));
    expect(unauthorized.error).not.toContain('wrong-key');
    expect((await tool('/garbage').run({ query: 'q' }, ctx())).error).toMatch(/returned a response that is not valid JSON \(starts with "<html>captcha/);
  });

  it('stops reading a response past its byte cap (4 MiB unless configured) and says so, naming the tool and the cap', async () => {
    const huge = (extra: object = {}) => new WebSearchTool({ provider: new JsonSearchProvider({ endpoint: `${base}/huge`, ...extra }) });
    const r = await huge().run({ query: 'q' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.error).toBe(`web_search (json:${base.slice(7)}): the response from ${base}/huge is over this tool's limit of 4 MiB; reading stopped there`);
    expect((await huge({ maxResponseBytes: 1024 }).run({ query: 'q' }, ctx())).error).toMatch(/^web_search \(json:[^)]+\): the response from \S+ is over this tool's limit of 1 KiB; reading stopped there$/);
    expect((await huge({ maxResponseBytes: 8 * 1024 * 1024 }).run({ query: 'q', max_results: 2 }, ctx())).ok).toBe(true);
  });

  it('keeps a key sent in the query string out of error messages', async () => {
    const t = new WebSearchTool({ provider: new JsonSearchProvider({ endpoint: `${base}/missing`, apiKey: 'secret-in-url', apiKeyIn: 'query' }) });
    const r = await t.run({ query: 'q' }, ctx());
    expect(seen[seen.length - 1].params.get('key')).toBe('secret-in-url');
    expect(r.error).toMatch(/answered HTTP 404/);
    expect(r.error).not.toContain('secret-in-url');
  });

  it('rejects an endpoint that is not an http(s) URL', () => {
    expect(() => new JsonSearchProvider({ endpoint: 'api.example.com/search' })).toThrow(/endpoint "api.example.com\/search" is not an absolute URL/);
    expect(() => new JsonSearchProvider({ endpoint: 'file:///etc/passwd' })).toThrow(/must be http\(s\)/);
  });

  it('reads dotted paths with fallbacks', () => {
    const v = { a: { b: [{ c: 1 }] }, x: 2 };
    expect(getPath(v, 'a.b.0.c')).toBe(1);
    expect(getPath(v, ['missing', 'x'])).toBe(2);
    expect(getPath(v, 'a.z.q')).toBeUndefined();
  });
});
