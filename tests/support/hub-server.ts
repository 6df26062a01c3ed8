// A loopback server in the Hugging Face hub's URL layout (/<org>/<repo>/resolve/main/<file>) for download
// tests: sends CORS headers as huggingface.co does (pages on another origin fetch from it), logs every
// request, and can inject faults (an HTTP status, or a connection cut partway through a body).
import { createServer, type Server } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import { join, normalize, resolve } from 'node:path';

export interface HubFault {
  status?: number;
  /** Send the full Content-Length, then only this many bytes, then drop the connection. */
  cutAfter?: number;
  /** Answer only after this many milliseconds (a download that hangs, for cancelling). */
  delayMs?: number;
}

export interface HubServer {
  url: string;
  server: Server;
  /** Paths requested, in order (OPTIONS preflights excluded). */
  requests: string[];
  /** Path -> fault; edit freely between requests. */
  faults: Map<string, HubFault>;
  close(): Promise<void>;
}

/** Serves `repos` ('org/repo' -> directory) at /<org>/<repo>/resolve/main/. */
export async function serveHub(repos: Record<string, string>): Promise<HubServer> {
  const requests: string[] = [];
  const faults = new Map<string, HubFault>();
  const server = createServer((req, res) => {
    const delay = req.method === 'OPTIONS' ? 0 : (faults.get(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname))?.delayMs ?? 0);
    if (delay > 0) setTimeout(() => respond(req, res), delay).unref();
    else respond(req, res);
  });
  const respond = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    if (res.destroyed) return;
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204);
      res.end();
      return;
    }
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(path);
    const fault = faults.get(path);
    if (fault?.status) {
      res.writeHead(fault.status, { 'content-type': 'text/plain' });
      res.end(`injected ${fault.status}`);
      return;
    }
    const m = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(path);
    const dir = m ? repos[m[1]] : undefined;
    if (m && dir) {
      const root = resolve(dir);
      const file = normalize(join(root, m[2]));
      try {
        if (!file.startsWith(root + '/')) throw new Error('outside');
        const st = statSync(file);
        if (!st.isFile()) throw new Error('not a file');
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size });
        if (fault?.cutAfter !== undefined) {
          const stream = createReadStream(file, { start: 0, end: fault.cutAfter - 1 });
          stream.on('data', (c) => res.write(c));
          stream.on('end', () => setTimeout(() => res.socket?.destroy(), 50));
          return;
        }
        createReadStream(file).pipe(res);
        return;
      } catch {
        // fall through to 404
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end(`Entry not found: ${path}`);
  };
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('hub server has no port');
  return {
    url: `http://127.0.0.1:${addr.port}`,
    server,
    requests,
    faults,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}
