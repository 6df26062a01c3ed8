// npx tsx bench/run-store-idb.ts [--at 100,1000,5000] [--steps 20] [--module path/to/run-store-idb.ts] [--browser]
// What storing one training step costs in the page's run store (src/trainer/run/run-store-idb.ts) as a run
// grows: for each run length N, a run with N steps is stored, then `--steps` more steps are stored as
// TrainingRun stores them (appendStep with the step's 16 rollout records, then save of the record), and the
// median ms per step is reported, with the time to load the run back. On fake-indexeddb (the unit tests'
// IndexedDB, in Node), or with --browser in headless Chromium (Debian's) on its real IndexedDB. Before the
// history was split off the run record, each step rewrote the whole history, twice.
// `--module`: time another copy of the store (an older commit's, saved beside the current one so its imports
// resolve), e.g. `git show c727dce:src/trainer/run/run-store-idb.ts > src/trainer/run/run-store-idb.before.ts`
// (delete it afterwards: it does not type-check against today's RunStore).
// Node's IndexedDB for the default mode (harmless with --browser, where the page has its own).
import 'fake-indexeddb/auto';
import { resolve } from 'node:path';
import { build } from 'esbuild';
import { launchChromium } from '../tests/support/chromium';
import { flag, log } from './flags';
import type { StoreBenchRow } from './run-store-idb-core';

const at = flag('at', '100,1000,5000').split(',').map(Number);
const steps = Number(flag('steps', '20'));
const module = resolve(flag('module', new URL('../src/trainer/run/run-store-idb.ts', import.meta.url).pathname));

let out: StoreBenchRow[];
if (process.argv.includes('--browser')) {
  const entry = `import { IdbRunStore } from ${JSON.stringify(module)}; import { benchRunStore } from ${JSON.stringify(new URL('./run-store-idb-core.ts', import.meta.url).pathname)};
    (globalThis as any).bench = (at: number[], steps: number) => benchRunStore(IdbRunStore, at, steps, (s) => console.log(s));`;
  const bundle = await build({ stdin: { contents: entry, loader: 'ts', resolveDir: process.cwd() }, bundle: true, format: 'iife', write: false, nodePaths: [new URL('../node_modules', import.meta.url).pathname] });
  const browser = await launchChromium({ webgpu: false });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => log(m.text()));
    // IndexedDB needs an origin: the page is served by the route, never fetched.
    await page.route('http://bench.invalid/', (r) => r.fulfill({ contentType: 'text/html', body: '<!doctype html><title>bench</title>' }));
    await page.goto('http://bench.invalid/');
    await page.addScriptTag({ content: bundle.outputFiles[0].text });
    out = await page.evaluate(([a, s]) => (globalThis as unknown as { bench: (at: number[], steps: number) => Promise<StoreBenchRow[]> }).bench(a, s), [at, steps] as [number[], number]);
  } finally {
    await browser.close();
  }
} else {
  const { benchRunStore } = await import('./run-store-idb-core');
  const { IdbRunStore } = (await import(module)) as typeof import('../src/trainer/run/run-store-idb');
  out = await benchRunStore(IdbRunStore, at, steps, log);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
