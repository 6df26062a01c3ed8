// A minimal static file server on loopback, for testing the production build as a static host serves it
// and for serving recorded fixtures in the Hugging Face hub's URL layout.
import { createServer, type Server } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.map': 'application/json',
};

export interface StaticServer {
  url: string;
  server: Server;
  requests: string[];
  close(): Promise<void>;
}

/**
 * Serves `mounts` (URL prefix -> directory) on 127.0.0.1 at a free port. Unknown paths are 404s, or with
 * `spaFallback` the mount's index.html (as hosts configured for single-page apps answer every path);
 * `immutableAssets` lets the browser cache the build's hashed files under assets/.
 */
export async function serveStatic(mounts: Record<string, string>, opts: { spaFallback?: boolean; immutableAssets?: boolean } = {}): Promise<StaticServer> {
  const requests: string[] = [];
  const entries = Object.entries(mounts).sort((a, b) => b[0].length - a[0].length);
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(path);
    for (const [prefix, dir] of entries) {
      if (!path.startsWith(prefix)) continue;
      const root = resolve(dir);
      let file = normalize(join(root, path.slice(prefix.length)));
      if (!file.startsWith(root)) break;
      try {
        if (opts.spaFallback && !existsSync(file)) file = join(root, 'index.html');
        if (statSync(file).isDirectory()) file = join(file, 'index.html');
        const st = statSync(file);
        // immutableAssets: hashed build files may be cached for good, as hosts serve them (then they load offline).
        const cache = opts.immutableAssets && /\/assets\//.test(path) ? { 'cache-control': 'public, max-age=31536000, immutable' } : {};
        res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': st.size, ...cache });
        createReadStream(file).pipe(res);
        return;
      } catch {
        break;
      }
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end(`not found: ${path}`);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('static server has no port');
  return {
    url: `http://127.0.0.1:${addr.port}`,
    server,
    requests,
    close: () => new Promise((ok) => server.close(() => ok())),
  };
}
