// Steps per second of a toy training run in the Training tab with its charts shown (issue 28.6): the
// production build in headless Chromium, the run started as a user would, the status line read every
// second. The toy steps run in a worker; what the page spends redrawing charts is CPU the worker does not
// get (and, on a busy main thread, steps shown late). Prints steps/s per window of steps and overall.
// Usage: npx tsx bench/training-charts.ts [steps=5000] [appRoot=.]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { buildApp } from '../tests/support/build-app';
import { launchChromium } from '../tests/support/chromium';
import { serveStatic } from '../tests/support/static-server';

const steps = Number(process.argv[2] ?? 5000);
const root = resolve(process.argv[3] ?? '.');
const outDir = mkdtempSync(join(tmpdir(), 'agentflow-bench-charts-'));
process.chdir(root);
await buildApp(outDir, join(root, 'vite.config.ts'), { root });
const server = await serveStatic({ '/': outDir });
const browser = await launchChromium();
try {
  const page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
  await page.goto(`${server.url}/#training`);
  await page.getByRole('spinbutton', { name: 'Steps' }).fill(String(steps));
  const status = () =>
    page.evaluate(() => document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-status"]')?.textContent ?? '');
  await page.getByRole('button', { name: /Toy mode/ }).click();
  const t0 = Date.now();
  const marks: Array<[number, number]> = [];
  for (;;) {
    await page.waitForTimeout(1000);
    const s = await status();
    const m = /step (\d+)/.exec(s);
    const at = m ? Number(m[1]) : 0;
    marks.push([(Date.now() - t0) / 1000, at]);
    if (/^(Done|Failed)/.test(s) || (Date.now() - t0) / 1000 > 3600) break;
  }
  const window = Math.max(1, Math.round(steps / 10));
  const rows: string[] = [];
  let prev: [number, number] = [0, 0];
  for (const mark of marks) {
    if (mark[1] - prev[1] >= window || mark === marks.at(-1)) {
      rows.push(`steps ${prev[1]}-${mark[1]}: ${((mark[1] - prev[1]) / (mark[0] - prev[0])).toFixed(1)} steps/s`);
      prev = mark;
    }
  }
  const [t, n] = marks.at(-1)!;
  console.log(rows.join('\n'));
  console.log(`overall: ${n} steps in ${t.toFixed(0)} s = ${(n / t).toFixed(1)} steps/s (${root})`);
} finally {
  await browser.close();
  await server.close();
}
