// The project's Vite dev server on a free loopback port, for e2e tests that load pages from the source tree.
import { createServer, type ViteDevServer } from 'vite';

export interface DevServer {
  /** e.g. http://127.0.0.1:41234 */
  base: string;
  vite: ViteDevServer;
  close(): Promise<void>;
}

export async function startDevServer(): Promise<DevServer> {
  const vite = await createServer({ configFile: 'vite.config.ts', server: { port: 0, host: '127.0.0.1' }, logLevel: 'error' });
  await vite.listen();
  const addr = vite.httpServer?.address();
  if (!addr || typeof addr === 'string') {
    await vite.close();
    throw new Error('vite dev server has no port');
  }
  return { base: `http://127.0.0.1:${addr.port}`, vite, close: () => vite.close() };
}
