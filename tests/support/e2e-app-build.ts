// The e2e project's global setup: the app built once, as `npm run build` makes it, for every e2e file that
// serves the plain app (six did their own identical build, about 10-15 s each on CI's 2 cores). Files that
// build something else (the library, another entry, the build test itself) still build their own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildApp } from './build-app';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The built app's folder (read-only to the tests: several serve it). */
    appDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), 'agentflow-e2e-app-'));
  await buildApp(dir);
  project.provide('appDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
