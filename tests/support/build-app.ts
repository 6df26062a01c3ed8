// The app as `npm run build` makes it, from inside a test. `npm run build` runs with NODE_ENV=production;
// inside Vitest it is 'test', and Vite then builds with import.meta.env.DEV = true: such a build looks for
// Pyodide under node_modules/ (the dev server's layout), so every Python call in it failed within
// milliseconds, and an e2e test that meant to stop a run "while its tool works" raced a 40 ms window.
import { build, type InlineConfig } from 'vite';

/** Builds with `configFile` into `outDir` as production does; `extra` is merged over the build options. */
export async function buildApp(outDir: string, configFile = 'vite.config.ts', extra: Omit<InlineConfig, 'configFile' | 'build'> & { build?: InlineConfig['build'] } = {}): Promise<void> {
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ ...extra, configFile, logLevel: 'error', build: { outDir, emptyOutDir: true, sourcemap: false, ...extra.build } });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}
