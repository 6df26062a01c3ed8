// The app's production build, served from a sub-path: every tab renders and is reachable from the
// keyboard, every control has an accessible name, a chat survives a reload, a benchmark file with a bad
// line reports that line and imports and runs the rest, toy training runs and stores an adapter, and the
// model cache lists and deletes what it holds. The scripted demo engines (chosen as a user would) stand in
// for the models.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveStatic, type StaticServer } from '../support/static-server';
import { countOf, poll, textOf, textsOf } from '../support/poll';

let server: StaticServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const shots = mkdtempSync(join(tmpdir(), 'agentflow-app-shots-'));
const SUB = '/some/app/';

beforeAll(async () => {
  server = await serveStatic({ [SUB]: outDir });
  browser = await launchChromium();
  console.info(`[ui-app] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function fresh(hash = ''): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}${SUB}${hash}`);
  await page.locator('agentflow-app [role="tablist"]').waitFor();
  return { context, page, errors };
}

/** Switches the Python tool off from the keyboard (Models & GPU → Privacy), so runs need no Pyodide. */
async function pythonOff(page: Page): Promise<void> {
  await page.getByRole('tab', { name: 'Models & GPU' }).click();
  const box = page.locator('agentflow-models-panel [data-tool="python"] input[type="checkbox"]');
  await box.focus();
  await page.keyboard.press('Space');
  expect(await box.isChecked()).toBe(false);
}

/** Interactive elements in the accessibility tree that have no accessible name. */
async function unnamedControls(page: Page): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as { nodes: Array<{ ignored: boolean; role?: { value: string }; name?: { value: string } }> };
  const roles = new Set(['button', 'checkbox', 'textbox', 'spinbutton', 'combobox', 'tab', 'link', 'radio', 'slider', 'progressbar']);
  const controls = nodes.filter((n) => !n.ignored && roles.has(n.role?.value ?? ''));
  // The tree reaches into the components' shadow roots: the four tabs are in it.
  expect(controls.filter((n) => n.role?.value === 'tab')).toHaveLength(4);
  return controls.filter((n) => !(n.name?.value ?? '').trim()).map((n) => n.role!.value);
}

describe('the app', () => {
  it('renders each tab, moves between tabs with the arrow keys, and names every control', async () => {
    const { context, page, errors } = await fresh();
    const tabs = page.getByRole('tab');
    expect(await tabs.allTextContents()).toEqual(['Chat', 'Experiments', 'Training', 'Models & GPU']);
    // First visit opens on Chat, with its short start; Models & GPU has the WebGPU report.
    expect(await page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.locator('agentflow-chat [data-testid="start"]').getByRole('button').allTextContents()).toEqual(['Try the demo', 'Load a model', 'Train the toy']);
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    await page.getByRole('tab', { name: 'Models & GPU' }).focus();
    const expected: Array<[string, string]> = [
      ['Chat', 'agentflow-chat textarea'],
      ['Experiments', 'agentflow-experiments-panel [data-testid="benchmark-file"]'],
      ['Training', 'agentflow-training-panel [data-testid="training-charts"]'],
      ['Models & GPU', 'agentflow-models-panel [data-testid="tool-switches"]'],
    ];
    for (const [name, probe] of expected) {
      await page.keyboard.press('ArrowRight');
      const tab = page.getByRole('tab', { name });
      expect(await tab.getAttribute('aria-selected')).toBe('true');
      expect(await tab.evaluate((el) => el.matches(':focus'))).toBe(true);
      const panel = page.getByRole('tabpanel', { name });
      expect(await panel.isVisible()).toBe(true);
      expect(await page.locator(probe).isVisible()).toBe(true);
      expect(await unnamedControls(page)).toEqual([]);
      await page.screenshot({ path: join(shots, `tab-${name.replace(/\W+/g, '-').toLowerCase()}.png`), fullPage: true });
    }
    // Network tools are marked, and off until allowed.
    const marks = page.locator('agentflow-models-panel [data-testid="network-mark"]');
    expect(await marks.count()).toBe(2);
    const wiki = page.locator('agentflow-models-panel [data-tool="wikipedia"]');
    expect(await wiki.getByRole('checkbox', { name: /^wikipedia/ }).isChecked()).toBe(true);
    expect(await wiki.locator('[data-testid="tool-state"]').textContent()).toBe('on, waiting for network permission');
    expect(await wiki.getByRole('button', { name: 'Allow wikipedia to use the network' }).isVisible()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('answers in the Chat tab and keeps the conversation across a reload', async () => {
    const { context, page, errors } = await fresh();
    await pythonOff(page);
    await page.getByRole('tab', { name: 'Chat' }).click();
    // No model is loaded: the chat offers the scripted demo.
    await page.getByRole('button', { name: 'Try the demo' }).click();
    const input = page.getByRole('textbox', { name: 'Your question' });
    await input.fill('What is the capital of France?');
    await page.keyboard.press('Enter');
    const answer = page.locator('agentflow-chat [data-testid="answer"] .text');
    await poll(textOf(answer)).toContain('You asked: What is the capital of France?');
    await page.getByRole('button', { name: /Show trajectory/ }).click();
    await poll(textOf(page.locator('agentflow-chat .trajectory'))).toContain('base_generator');
    await page.screenshot({ path: join(shots, 'chat-answer.png'), fullPage: true });

    await page.reload();
    await poll(() => page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected')).toBe('true');
    const item = page.locator('agentflow-chat [data-testid="conversation-list"] button.open');
    await poll(textsOf(item)).toEqual([expect.stringContaining('What is the capital of France?')]);
    await item.first().focus();
    await page.keyboard.press('Enter');
    await poll(textOf(answer)).toContain('You asked: What is the capital of France?');
    // Python stayed off: the switch was stored.
    await poll(() => page.locator('agentflow-models-panel [data-tool="python"] input[type="checkbox"]').isChecked()).toBe(false);
    // Deleting asks first, then removes it from the list and from storage.
    await page.getByRole('button', { name: /Delete conversation “What is the capital of France\?”/ }).click();
    await page.screenshot({ path: join(shots, 'chat-delete-question.png') });
    await page.getByRole('button', { name: /Yes, delete conversation “What is the capital of France\?”/ }).click();
    await page.locator('agentflow-chat [data-testid="conversation-list"] li').waitFor({ state: 'detached' });
    // A newer AgentFlow in another tab upgrades the database: this tab lets go of it and says to reload,
    // once, in the app's banner (not again inside the chat).
    const newer = await context.newPage();
    await newer.goto(`${server.url}${SUB}icon.svg`);
    expect(await newer.evaluate(() => new Promise<number>((res, rej) => {
      const r = indexedDB.open('agentflow', 1000);
      r.onsuccess = () => (res(r.result.version), r.result.close());
      r.onerror = () => rej(r.error);
    }))).toBe(1000);
    await poll(textOf(page.locator('agentflow-app [data-testid="storage-banner"]'))).toContain('AgentFlow was updated in another tab: reload this tab.');
    expect(await page.locator('agentflow-chat [data-testid="storage-notice"]').count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('imports a benchmark with a malformed line, reports the line, runs the rest and shows results', async () => {
    const { context, page, errors } = await fresh();
    await pythonOff(page);
    await page.getByRole('button', { name: 'Use the scripted demo' }).click();
    await page.getByRole('tab', { name: 'Experiments' }).click();
    const jsonl = ['{"pid": "a1", "query": "What is 2+2?", "answer": "4"}', '{"pid": "a2", "query": broken', '', '{"pid": "a3", "question": "Name a primary colour.", "answer": "red"}'].join('\n');
    await page.locator('agentflow-experiments-panel [data-testid="benchmark-file"]').setInputFiles({ name: 'mini-bench.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(jsonl) });
    const summary = page.locator('agentflow-experiments-panel [data-testid="import-summary"]');
    await poll(textOf(summary)).toContain('Imported 2 items from “mini-bench”');
    await poll(textsOf(page.locator('agentflow-experiments-panel [data-testid="import-problems"] li'))).toEqual([expect.stringMatching(/^line 2 of mini-bench\.jsonl is not valid JSON/)]);

    await page.getByRole('spinbutton', { name: 'Turn budget' }).fill('2');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const rows = page.locator('agentflow-experiments-panel [data-testid="items"] tbody tr');
    await page.waitForFunction(
      () => {
        const panel = document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-experiments-panel');
        return panel?.shadowRoot?.querySelectorAll('[data-testid="items"] tbody tr').length === 2 && !panel.shadowRoot.querySelector('progress');
      },
      undefined,
      { timeout: 60_000 },
    );
    await poll(countOf(rows)).toBe(2);
    const cells = await rows.first().locator('td').allTextContents();
    // Numbered as the subset box numbers items; question, expected and given answer side by side.
    expect(cells.slice(0, 3)).toEqual(['1', 'What is 2+2?', '4']);
    expect(cells[3]).toContain('You asked: What is 2+2?');
    expect(cells[4]).toBe('no');
    // The rule that scored it: the demo's reply has no stated answer, so the whole reply was compared.
    expect(cells[5]).toBe('exact text');
    expect(cells[6]).toBe('base_generator×1');
    await poll(textOf(page.locator('agentflow-experiments-panel [data-testid="runs"] tbody tr').first())).toContain('0/2 (0%)');
    // A second run of item 2 only, compared item by item with the first.
    await page.getByRole('textbox', { name: /Items/ }).fill('2');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const runs = page.locator('agentflow-experiments-panel [data-testid="runs"] tbody tr');
    await page.waitForFunction(() => {
      const panel = document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-experiments-panel');
      return panel?.shadowRoot?.querySelectorAll('[data-testid="runs"] tbody tr').length === 2 && !panel.shadowRoot.querySelector('progress');
    }, undefined, { timeout: 60_000 });
    await poll(textOf(runs.first().locator('td .name'))).toMatch(/^scripted demo · mini-bench × 1 · 2 turns · \d{4}-\d\d-\d\d \d\d:\d\d$/);
    // The run whose results are open is marked A in the table.
    await poll(textOf(runs.first().locator('[data-testid="run-mark"]'))).toBe('A');
    await runs.nth(1).getByRole('button', { name: 'Compare' }).click();
    // A is the run whose results were open (item 2 only), B the one compared with it (items 1 and 2): one
    // table, matched by item. It appears before its rows have loaded: wait for the rows themselves.
    const cmp = page.locator('agentflow-experiments-panel [data-testid="comparison"] [data-testid="compare-items"] tbody tr');
    await poll(countOf(cmp)).toBe(2);
    const cmpCells = async (n: number) => (await cmp.nth(n).locator('td').allTextContents()).map((t) => t.replace(/\s+/g, ' ').trim());
    expect((await cmpCells(0)).slice(0, 5)).toEqual(['1', 'What is 2+2?', '4', '—', '—']);
    expect((await cmpCells(0)).slice(5)).toEqual([expect.stringContaining('You asked: What is 2+2?'), 'no', 'B']);
    expect((await cmpCells(1)).slice(0, 3)).toEqual(['2', 'Name a primary colour.', 'red']);
    expect((await cmpCells(1)).slice(4)).toEqual(['no', expect.stringContaining('You asked: Name a primary colour.'), 'no', 'A B']);
    await poll(textOf(page.locator('agentflow-experiments-panel [data-testid="compare-counts"]'))).toBe('Item by item: 1 wrong in both, 1 only in run B.');
    expect(await page.locator('agentflow-experiments-panel [data-testid="run-summary"] h4').allTextContents()).toEqual([expect.stringMatching(/^A: scripted demo · mini-bench × 1 · /), expect.stringMatching(/^B: scripted demo · mini-bench × 2 · /)]);
    await page.screenshot({ path: join(shots, 'experiments-compare.png'), fullPage: true });
    await runs.nth(1).getByRole('button', { name: 'Results' }).click();
    await runs.nth(1).getByRole('button', { name: 'Compare' }).waitFor();
    // The item links to its trajectory.
    await rows.first().getByRole('button', { name: 'Open' }).click();
    await poll(textOf(page.locator('agentflow-experiments-panel .trajectory'))).toContain('What is 2+2?');
    await page.screenshot({ path: join(shots, 'experiments.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('runs toy Flow-GRPO training with pause and resume, charts it and stores the adapter', async () => {
    const { context, page, errors } = await fresh('#training');
    await page.getByRole('spinbutton', { name: 'Steps' }).fill('12');
    await page.getByText('Advanced: learning settings').click();
    await page.getByRole('spinbutton', { name: 'Group size' }).fill('4');
    const status = page.locator('agentflow-training-panel [data-testid="training-status"]');
    const statusText = () =>
      page.evaluate(() => document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-status"]')?.textContent ?? '');
    const waitStatus = (re: RegExp) => page.waitForFunction(
      (src) => new RegExp(src).test(document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-status"]')?.textContent ?? ''),
      re.source,
      { timeout: 60_000, polling: 20 },
    );
    await page.getByRole('button', { name: /Toy mode/ }).click();
    await waitStatus(/^Running: step [1-9]/);
    await page.getByRole('button', { name: 'Pause' }).click();
    await waitStatus(/^Paused at step \d+/);
    const pausedAt = Number(/step (\d+)/.exec(await statusText())![1]);
    expect(pausedAt).toBeLessThan(12);
    await page.waitForTimeout(300);
    expect(await statusText()).toMatch(new RegExp(`^Paused at step ${pausedAt} of 12,`));
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await waitStatus(/^Done: step 12 /);
    expect(await status.textContent()).toMatch(/^Done: step 12 of 12, reward \d\.\d\d$/);
    // Each chart drew a line through the 12 steps.
    const paths = () => page.locator('agentflow-training-panel [data-testid="training-charts"] [data-points]').evaluateAll((ps) => ps.flatMap((p) => (p as HTMLElement).dataset.points!.split(',').map(Number)));
    // Reward (and its rolling mean), loss, clip fraction, tokens/s and rollout time, 12 points each; the KL,
    // not measured at the toy's beta 0, none.
    await poll(paths).toEqual([12, 12, 12, 0, 12, 12, 12]);
    const adapters = page.locator('agentflow-training-panel [data-testid="adapters"] tbody tr');
    await poll(textOf(adapters.first())).toMatch(/toy-.* step 12/);
    // A toy checkpoint is for the toy planner only: no Activate, and the row says why.
    await poll(textOf(adapters.first())).toContain('Not for chat: made for the toy task’s tiny planner');
    expect(await adapters.first().getByRole('button', { name: /^Activate adapter / }).count()).toBe(0);
    // Checkpoints at the pause and at the end each stored an adapter.
    expect(await adapters.count()).toBeGreaterThanOrEqual(2);
    await page.screenshot({ path: join(shots, 'training.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('lists cached models with their size and deletes one', async () => {
    const { context, page, errors } = await fresh('#models');
    await page.evaluate(async () => {
      const c = await caches.open('agentflow-models');
      const base = 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/';
      await c.put(base + 'config.json', new Response('{"a":1}', { headers: { 'content-length': '7' } }));
      await c.put(base + 'model.safetensors', new Response(new Uint8Array(3 * 1024 * 1024)));
    });
    await page.getByRole('button', { name: 'Refresh' }).click();
    const row = page.locator('agentflow-models-panel [data-testid="cached-models"] tbody tr');
    await poll(async () => (await row.first().locator('td').allTextContents()).slice(0, 3)).toEqual(['Qwen/Qwen2.5-0.5B-Instruct', '2', '3.0 MiB']);
    await page.screenshot({ path: join(shots, 'models-cache.png'), fullPage: true });
    await page.getByRole('button', { name: 'Delete cached model Qwen/Qwen2.5-0.5B-Instruct' }).click();
    // It asks first, saying what deleting costs: the download again.
    await poll(textOf(page.locator('agentflow-models-panel [data-testid="delete-question"]'))).toMatch(/^\s*Delete this model’s files\? Loading it again downloads 3\.0 MiB\.\s+Delete\s+Keep\s*$/);
    await page.getByRole('button', { name: 'Yes, delete cached model Qwen/Qwen2.5-0.5B-Instruct' }).click();
    await page.locator('agentflow-models-panel [data-testid="cache-empty"]').waitFor();
    expect(await page.evaluate(async () => (await (await caches.open('agentflow-models')).keys()).length)).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('says plainly when WebGPU is missing and keeps model loading off', async () => {
    const noGpu = await launchChromium({ webgpu: false });
    try {
      const page = await noGpu.newPage();
      await page.goto(`${server.url}${SUB}#models`);
      const warnings = page.locator('agentflow-models-panel [data-testid="resource-warnings"]');
      await poll(textOf(warnings), 60_000).toContain('WebGPU is not available here, so the models cannot run in this browser');
      await poll(() => page.getByRole('button', { name: 'Download and load models' }).isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: 'Use the scripted demo' }).isEnabled()).toBe(true);
    } finally {
      await noGpu.close();
    }
  });
});
