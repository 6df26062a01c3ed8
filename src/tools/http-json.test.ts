import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_RESPONSE_BYTES, fetchJson, formatBytes, redactUrl, ToolHttpError, trimText } from './http-json';

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

// A server that streams JSON-looking text for as long as the client reads it (up to 64 MiB), and notes how
// much it got to send before the client hung up.
const ENDLESS_LIMIT = 64 * 1024 * 1024;
let server: Server;
let base = '';
const streamed: Array<{ sent: number; finished: boolean; closed: boolean }> = [];

function stream(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  const record = { sent: 0, finished: false, closed: false };
  streamed.push(record);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  const chunk = Buffer.from(`{"pageid": 1, "title": "${'x'.repeat(65_000)}"},`);
  res.on('close', () => (record.closed = true));
  const pump = () => {
    while (!record.closed) {
      if (record.sent >= ENDLESS_LIMIT) {
        record.finished = true;
        res.end(']}');
        return;
      }
      record.sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
  };
  res.write('{"results": [');
  pump();
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/endless') return stream(res, 200);
    if (path === '/endless-500') return stream(res, 500);
    if (path === '/declared') {
      // Says it is 1 GB; sends a little and waits, as a slow huge download would.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1e9) });
      res.write('{"results": [');
      return;
    }
    if (path === '/small') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'é'.repeat(1000) }));
    res.writeHead(404).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  base = `http://127.0.0.1:${addr.port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((ok) => server.close(() => ok()));
});

const get = (path: string, maxBytes?: number) => fetchJson('test_tool', `${base}${path}?key=secret`, { signal: AbortSignal.timeout(30_000) }, maxBytes);

describe('fetchJson size cap', () => {
  it('stops reading a body at the cap, hangs up, and names the tool and the cap', async () => {
    streamed.length = 0;
    const err = await get('/endless', 256 * 1024).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolHttpError);
    expect((err as ToolHttpError).kind).toBe('too-large');
    expect((err as Error).message).toBe(`test_tool: the response from ${base}/endless is over this tool's limit of 256 KiB; reading stopped there`);
    // The client hung up long before the 64 MiB were out (merely not reading on would leave it open).
    await expect.poll(() => streamed[0].closed, { timeout: 10_000 }).toBe(true);
    expect(streamed[0].finished).toBe(false);
    expect(streamed[0].sent).toBeLessThan(ENDLESS_LIMIT / 4);
  });

  it('refuses a body whose declared length is over the cap without waiting for it', async () => {
    const err = await get('/declared', 1024 * 1024).catch((e: unknown) => e);
    expect((err as ToolHttpError).kind).toBe('too-large');
    expect((err as Error).message).toBe(`test_tool: the response from ${base}/declared would be 1000000000 bytes, over this tool's limit of 1 MiB; it was not read`);
  });

  it('an error status over the cap reports the status, with the start of what was read', async () => {
    const err = await get('/endless-500', 64 * 1024).catch((e: unknown) => e);
    expect((err as ToolHttpError).kind).toBe('http');
    expect((err as Error).message).toMatch(/^test_tool: http:\/\/127\.0\.0\.1:\d+\/endless-500 answered HTTP 500 Internal Server Error \(starts with "\{\\"results\\": \[\{\\"pageid/);
  });

  it('reads a body under the cap whole, multi-byte characters split across chunks included', async () => {
    expect(await get('/small', 2002 + 20)).toEqual({ text: 'é'.repeat(1000) });
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(4 * 1024 * 1024);
    expect(await get('/small')).toEqual({ text: 'é'.repeat(1000) });
    expect((await get('/small', 2000).catch((e: unknown) => e) as ToolHttpError).kind).toBe('too-large');
    expect([formatBytes(4 * 1024 * 1024), formatBytes(512 * 1024), formatBytes(1000)]).toEqual(['4 MiB', '512 KiB', '1000 bytes']);
  });
});
