// Training tab on the real planner: the qwen2-tiny fixture is served in the hub's layout (with a byte-level
// tokenizer), loaded through the planner worker, a 2-item benchmark is imported, and Flow-GRPO steps run
// on agent rollouts (group size 2, one turn, a few tokens per module) with the optimizer step in the
// planner worker. The charts gain a point per step and the checkpoint's adapter is stored.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveHub, type HubServer } from '../support/hub-server';
import { serveStatic, type StaticServer } from '../support/static-server';
import { tinyChatModelDir } from '../support/tiny-chat-model';

let server: StaticServer;
let hub: HubServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const shots = mkdtempSync(join(tmpdir(), 'agentflow-train-shots-'));
const SUB = '/models/train/';

beforeAll(async () => {
  hub = await serveHub({ 'test-org/qwen2-tiny': tinyChatModelDir() });
  server = await serveStatic({ [SUB]: outDir });
  browser = await launchChromium();
  console.info(`[ui-train-agent] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await hub?.close();
});

const inPanel = (page: Page, selector: string) =>
  page.evaluate((sel) => document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector(sel)?.textContent ?? '', selector);

const waitStatus = (page: Page, re: RegExp, timeout: number) =>
  page.waitForFunction(
    (src) => new RegExp(src).test(document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-status"]')?.textContent ?? ''),
    re.source,
    { timeout, polling: 200 },
  );

/**
 * Loads the fixture as the planner for every module, with one tool switched on (short prompts, and so short
 * prefills and backward passes on SwiftShader), then opens Training.
 */
async function loadPlanner(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Models & GPU' }).click();
  await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
  const switches = page.locator('agentflow-tool-switches li[data-tool] > label input[type="checkbox"]');
  await switches.first().waitFor({ state: 'attached' });
  // The switches sit in a collapsed section; a click on the element toggles it and fires 'change'.
  const n = await switches.count();
  for (let i = 0; i < n; i++) await switches.nth(i).evaluate((el, keep) => void ((el as HTMLInputElement).checked !== keep && (el as HTMLInputElement).click()), i === 0);
  await page.getByRole('textbox', { name: /Planner model/ }).fill(`${hub.url}/test-org/qwen2-tiny/resolve/main/`);
  await page.getByRole('combobox', { name: /Shared model/ }).fill('');
  await page.getByRole('button', { name: 'Download and load models' }).click();
  await plannerInUse(page);
}

/** Waits until Models & GPU shows a planner in use (loaded here, or brought back by the app), then opens Training. */
async function plannerInUse(page: Page): Promise<void> {
  await page.waitForFunction(
    () => /\(planner:/.test(document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-models-panel')?.shadowRoot?.querySelector('[data-testid="engines-in-use"]')?.textContent ?? ''),
    undefined,
    { timeout: 120_000 },
  );
  await page.getByRole('tab', { name: 'Training' }).click();
}

async function importBench(page: Page): Promise<void> {
  const bench = [
    { pid: 'a', query: 'What is 1+1?', answer: '2' },
    { pid: 'b', query: 'What is 2+2?', answer: '4' },
  ];
  await page.locator('agentflow-training-panel [data-testid="training-benchmark-file"]').setInputFiles({ name: 'tiny.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bench)) });
  await page.locator('agentflow-training-panel [data-testid="training-benchmark-summary"]').waitFor();
}

async function tinyBudgets(page: Page, steps: number): Promise<void> {
  // The knobs are under the Advanced fold.
  const advanced = page.locator('agentflow-training-panel details.advanced');
  if (!(await advanced.evaluate((d) => (d as HTMLDetailsElement).open))) await advanced.locator('summary').click();
  await page.getByRole('spinbutton', { name: 'Group size' }).fill('2');
  await page.getByRole('spinbutton', { name: 'Steps' }).fill(String(steps));
  await page.getByRole('spinbutton', { name: 'LoRA rank' }).fill('2');
  await page.getByRole('spinbutton', { name: 'Max turns' }).fill('1');
  await page.getByRole('spinbutton', { name: 'Planner tokens' }).fill('3');
  await page.getByRole('spinbutton', { name: "Other modules' tokens" }).fill('2');
  await page.getByRole('spinbutton', { name: 'Queries per step' }).fill('1');
  await page.getByRole('spinbutton', { name: 'Micro-batch tokens' }).fill('1536');
  // The tiny planner never answers right: dynamic sampling would add 8 rollouts to each group (5× the time).
  await page.getByRole('spinbutton', { name: 'extra rollouts' }).fill('0');
}

// One run, paused after its first step, checked, reloaded and resumed to its end: each page load compiles the
// planner's kernels in SwiftShader again (about a minute here), so a separate 1-step run cost a load of its own.
describe('Training tab on the real planner', () => {
  it('trains the loaded planner on agent rollouts of an imported benchmark, charts and stores each step, pauses, and after a reload resumes the stored run from its checkpoint to the end', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));

    // Without a planner model the option is there but disabled, and the page says why.
    await page.goto(`${server.url}${SUB}#training`);
    const agentOption = page.locator('agentflow-training-panel #dataset option[value="agent"]');
    await agentOption.waitFor({ state: 'attached' });
    expect(await agentOption.evaluate((o) => (o as HTMLOptionElement).disabled)).toBe(true);
    expect(await inPanel(page, '[data-testid="agent-availability"]')).toMatch(/needs a planner model loaded in Models & GPU/);

    await loadPlanner(page);
    const chartLabels = () => page.locator('agentflow-training-panel [data-testid="training-charts"] [role="img"]').evaluateAll((ss) => ss.map((s) => s.getAttribute('aria-label') ?? ''));
    expect((await chartLabels()).every((l) => l.endsWith('no data'))).toBe(true);
    expect(await inPanel(page, '[data-testid="agent-availability"]')).toMatch(/Import a benchmark/);
    await importBench(page);
    expect(await inPanel(page, '[data-testid="training-benchmark-summary"]')).toMatch(/Imported 2 items from “tiny”/);
    expect(await agentOption.evaluate((o) => (o as HTMLOptionElement).disabled)).toBe(false);
    expect(await page.locator('agentflow-training-panel #dataset').inputValue()).toBe('agent');

    await tinyBudgets(page, 2);
    await page.getByRole('button', { name: 'Start training the planner' }).click();
    await waitStatus(page, /^Running: step 1|Training stopped/, 480_000);
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await waitStatus(page, /^(Paused at|Failed at|Done:) step/, 300_000);
    expect(await inPanel(page, '[role="alert"]')).toBe('');
    expect(await inPanel(page, '[data-testid="training-status"]')).toMatch(/^Paused at step 1 of 2, reward 0\.00$/);
    expect(await inPanel(page, '[data-testid="training-label"]')).toMatch(/Planner on agent rollouts of “tiny” \(planner:qwen2-tiny\), run agent-/);
    const runId = /run (agent-\S+)/.exec(await inPanel(page, '[data-testid="training-label"]'))![1];

    // Each chart now holds the step's value (reward, loss, KL, clip fraction, tokens/s, and from the
    // planner worker: the rollouts' time and the sequences its decode steps served).
    const labels = await chartLabels();
    expect(labels).toHaveLength(7);
    expect(labels[6]).toMatch(/^Planner replies decoded together \(sequences per decode step\): sequences\/step [\d.]+$/);
    expect(Number(labels[6].split(' ').pop())).toBeGreaterThanOrEqual(1);
    for (const l of labels) expect(l).toMatch(/: [\w ,/.-]+ -?[\d.e+-]+$/);
    expect(labels[0]).toMatch(/^Reward \(share of rollouts answered right\): reward 0, rolling 0$/);
    // Every chart holds the step's point (the reward chart has the reward and its rolling mean).
    // Points on each chart's canvas, set once the chart has drawn the step (the next animation frame).
    const paths = () => page.locator('agentflow-training-panel [data-testid="training-charts"] [data-points]').evaluateAll((ps) => ps.flatMap((p) => (p as HTMLElement).dataset.points!.split(',').map(Number)));
    await expect.poll(paths).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    const adapters = page.locator('agentflow-training-panel [data-testid="adapters"] tbody tr');
    await expect.poll(async () => (await adapters.first().textContent()) ?? '', { timeout: 30_000 }).toMatch(/agent-.* step 1/);
    expect(await adapters.first().textContent()).toContain('qwen2-tiny');
    // The run's rollouts are stored with the adapter that sampled them: the one being trained.
    const stored = await page.evaluate(async () => {
      const db = await new Promise<IDBDatabase>((res, rej) => {
        const r = indexedDB.open('agentflow');
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      const all = await new Promise<Array<{ runId: string; adapterId: string | null; reward?: number; tokens: number[] }>>((res) => {
        const q = db.transaction('rollouts').objectStore('rollouts').getAll();
        q.onsuccess = () => res(q.result);
      });
      return all.filter((r) => r.runId.startsWith('agent-')).map((r) => ({ adapter: r.adapterId, reward: r.reward, tokens: r.tokens.length }));
    });
    expect(stored.length).toBeGreaterThanOrEqual(2);
    for (const r of stored) {
      expect(r.adapter).toMatch(/^training:agent-/);
      expect(r.reward).toBe(0);
      expect(r.tokens).toBeGreaterThan(0);
    }
    await page.screenshot({ path: join(shots, 'training-agent.png'), fullPage: true });

    await page.reload();
    // The app brings the last model back from the cache by itself (loading it a second time here would
    // replace the engines the resumed run is using, which ends that run).
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    await plannerInUse(page);
    // The tab shows the run after the reload, paused, with one Resume (the tab's own).
    const run = page.locator(`agentflow-training-panel [data-testid="training-runs"] li[data-run="${runId}"]`);
    await expect.poll(async () => ((await run.textContent()) ?? '').replace(/\s+/g, ' '), { timeout: 30_000 }).toMatch(/: step 1 of 2 — (paused|interrupted) \(shown above\)/);
    await expect.poll(() => inPanel(page, '[data-testid="training-status"]')).toMatch(/^(Paused|Interrupted) at step 1 of 2, reward 0\.00/);
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await waitStatus(page, /^(Done: step|Failed at step) 2 |Training stopped/, 300_000).catch(() => undefined);
    expect(await inPanel(page, '[role="alert"]')).toBe('');
    expect(await inPanel(page, '[data-testid="training-status"]')).toMatch(/^Done: step 2 of 2, reward \d\.\d\d$/);
    // Every reward was 0, so no step learned from its rewards, and the tab says so (a warning, not an error).
    expect(await inPanel(page, '[data-testid="no-signal"]')).toMatch(/^This run learned nothing: /);
    // The chart kept the step from before the reload and added the resumed one.
    await expect.poll(paths).toEqual([2, 2, 2, 2, 2, 2, 2, 2]);
    const names = await page.locator('agentflow-training-panel [data-testid="adapters"] tbody tr td:first-child').allTextContents();
    expect(names.some((n) => n.startsWith(`${runId} step 1`))).toBe(true);
    expect(names.some((n) => n.startsWith(`${runId} step 2`))).toBe(true);
    await page.screenshot({ path: join(shots, 'training-agent-resumed.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });
});
