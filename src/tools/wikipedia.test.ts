// The Wikipedia tool against a local HTTP server that answers with recorded MediaWiki API responses.
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WikipediaTool } from './wikipedia';
import type { ToolContext } from './tool';

const FIX = join(import.meta.dirname, '../../tests/fixtures-local/wikipedia');
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');
const json = (name: string) => JSON.parse(fixture(name));

let server: Server;
let api = '';
const requests: URLSearchParams[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname !== '/w/api.php') {
      res.writeHead(404).end('not found');
      return;
    }
    const p = u.searchParams;
    requests.push(p);
    const send = (body: string, status = 200, type = 'application/json; charset=utf-8') => {
      res.writeHead(status, { 'content-type': type, 'access-control-allow-origin': '*' });
      res.end(body);
    };
    if (p.get('list') === 'search') {
      const q = p.get('srsearch');
      if (q === 'Eiffel Tower' || q === 'eiffel tower') return send(fixture('search-eiffel-tower.json'));
      if (q === 'Eifel towr') return send(fixture('search-misspelled.json'));
      if (q === 'qqzx nothing') return send(fixture('search-no-results.json'));
      if (q === 'api error') return send(fixture('error-badvalue.json'));
      if (q === 'server down') return send('<!DOCTYPE html><html><body>Wikimedia Error: our servers are currently under maintenance</body></html>', 503, 'text/html');
      if (q === 'huge') {
        // 5 MiB, written in pieces (no content-length): only counting while reading catches it.
        res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
        res.write('{"query": {"search": [');
        const hit = JSON.stringify({ pageid: 1, title: 'T', snippet: 's'.repeat(1000) });
        for (let i = 0; i < 5 * 1024; i++) res.write(`${i ? ',' : ''}${hit}`);
        return void res.end(']}}');
      }
      if (q === 'broken json') return send(fixture('search-eiffel-tower.json').slice(0, 120));
      return send(fixture('search-no-results.json'));
    }
    if (p.get('prop') === 'extracts|info' && p.get('pageids') === '9232|12894|61624716') return send(fixture('extracts-eiffel-tower.json'));
    if (p.get('prop') === 'extracts|info' && p.get('pageids') === '9232') {
      const full = json('extracts-eiffel-tower.json');
      full.query.pages = full.query.pages.slice(0, 1);
      return send(JSON.stringify(full));
    }
    send('unexpected request', 400, 'text/plain');
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  api = `http://127.0.0.1:${addr.port}/w/api.php`;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

const ctx = (): ToolContext => ({ signal: new AbortController().signal, timeoutMs: 10_000 });

describe('wikipedia tool', () => {
  it('searches, then returns the introductions of the top hits in search order, trimmed', async () => {
    requests.length = 0;
    const tool = new WikipediaTool({ apiUrl: api, maxCharsPerArticle: 600 });
    const r = await tool.run({ query: 'Eiffel Tower', max_results: 3 }, ctx());
    expect(r.ok).toBe(true);
    const parts = r.output.split('\n\n');
    expect(parts).toHaveLength(3);

    const pages = json('extracts-eiffel-tower.json').query.pages;
    const [eiffel, gustave] = pages;
    // 1: the long introduction, cut at a sentence end within the limit.
    const [t1, u1, ...rest1] = parts[0].split('\n');
    expect(t1).toBe('[1] Eiffel Tower');
    expect(u1).toBe('https://en.wikipedia.org/wiki/Eiffel_Tower');
    const text1 = rest1.join('\n');
    expect(text1.length).toBeLessThanOrEqual(602);
    expect(text1.endsWith('. …')).toBe(true);
    expect(eiffel.extract.startsWith(text1.slice(0, -2))).toBe(true);
    // 2: short enough to be whole.
    expect(parts[1]).toBe(`[2] Gustave Eiffel\nhttps://en.wikipedia.org/wiki/Gustave_Eiffel\n${gustave.extract}`);
    // 3: an empty extract falls back to the search snippet, without its HTML.
    expect(parts[2]).toBe(
      '[3] Eiffel Tower replicas and derivatives\nhttps://en.wikipedia.org/wiki/Eiffel_Tower_replicas_and_derivatives\n' +
        'As one of the most iconic and recognizable structures in the world, the Eiffel Tower has been the inspiration for the creation of many replicas & similar towers',
    );

    // The requests are anonymous CORS requests in the formatversion=2 JSON shape.
    expect(requests).toHaveLength(2);
    for (const p of requests) {
      expect(p.get('origin')).toBe('*');
      expect(p.get('format')).toBe('json');
      expect(p.get('formatversion')).toBe('2');
    }
    expect(requests[0].get('srlimit')).toBe('3');
    expect(requests[1].get('explaintext')).toBe('1');
    expect(requests[1].get('exintro')).toBe('1');
  });

  it('asks for as many results as requested', async () => {
    requests.length = 0;
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'Eiffel Tower', max_results: 1 }, ctx());
    expect(requests[0].get('srlimit')).toBe('1');
    expect(r.output.split('\n')[0]).toBe('[1] Eiffel Tower');
    expect(r.output).not.toContain('[2]');
  });

  it("follows MediaWiki's spelling suggestion once when the search finds nothing", async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'Eifel towr' }, ctx());
    expect(r.ok).toBe(true);
    expect(r.output.startsWith('No results for "Eifel towr"; showing results for "eiffel tower".\n\n[1] Eiffel Tower\n')).toBe(true);
  });

  it('says plainly when there are no results', async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'qqzx nothing' }, ctx());
    expect(r).toEqual({ ok: true, output: 'No Wikipedia articles found for "qqzx nothing". Try fewer or different keywords, or the exact name.' });
  });

  it('turns an HTTP error into a tool error with the status', async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'server down' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(new RegExp(`^wikipedia: ${api.replace(/[.?]/g, '\\$&')} answered HTTP 503 Service Unavailable \\(starts with "<!DOCTYPE html>`));
  });

  it('stops reading a response past its byte cap (4 MiB unless configured) and says so, naming the tool and the cap', async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'huge' }, ctx());
    expect(r).toEqual({ ok: false, output: '', error: `wikipedia: the response from ${api} is over this tool's limit of 4 MiB; reading stopped there` });
    const small = await new WikipediaTool({ apiUrl: api, maxResponseBytes: 512 }).run({ query: 'Eiffel Tower' }, ctx());
    expect(small.error).toBe(`wikipedia: the response from ${api} is over this tool's limit of 512 bytes; reading stopped there`);
  });

  it('turns malformed JSON into a tool error', async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'broken json' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^wikipedia: .* returned a response that is not valid JSON \(starts with "\{ \\"batchcomplete\\"/);
  });

  it("turns the API's own error object into a tool error", async () => {
    const r = await new WikipediaTool({ apiUrl: api }).run({ query: 'api error' }, ctx());
    expect(r).toEqual({ ok: false, output: '', error: 'wikipedia: the API refused the request: badvalue: Unrecognized value for parameter "list": serch.' });
  });

  it('reports an unreachable server and a cancelled call', async () => {
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((ok) => closed.close(() => ok()));
    const r = await new WikipediaTool({ apiUrl: `http://127.0.0.1:${port}/w/api.php` }).run({ query: 'x' }, ctx());
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(new RegExp(`^wikipedia: could not reach http://127.0.0.1:${port}/w/api.php`));

    const ac = new AbortController();
    ac.abort();
    const c = await new WikipediaTool({ apiUrl: api }).run({ query: 'Eiffel Tower' }, { signal: ac.signal, timeoutMs: 1000 });
    expect(c).toEqual({ ok: false, output: '', error: 'wikipedia: cancelled' });
  });

  it('rejects a base URL that is not absolute', () => {
    expect(() => new WikipediaTool({ apiUrl: 'en.wikipedia.org/w/api.php' })).toThrow(/apiUrl "en.wikipedia.org\/w\/api.php" is not an absolute URL/);
  });
});
