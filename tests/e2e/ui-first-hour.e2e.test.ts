// A user's first hour with the production build (issue #20): what they meet with no model, the checks made
// before any work (a malformed model id, a page served as a model file, offline, the download size of both
// engines), and what happens across a reload with a real (tiny, random) planner served in the hub's layout:
// the model comes back from the cache, a load can be cancelled, a question too long for the model is
// refused up front, Resume asks before switching engines, and an adapter the planner refuses is not marked
// active. The app is built once; each scenario starts a fresh browser context.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../support/byte-tokenizer';
import { launchChromium } from '../support/chromium';
import { serveHub, type HubServer } from '../support/hub-server';
import { randomQwen2, toHfFiles } from '../support/random-qwen2';
import { serveStatic, type StaticServer } from '../support/static-server';
import { TINY_MLC } from '../../src/io/test-fixtures';
import { formatBytes } from '../../src/controllers/progress-tracker';
import { poll } from '../support/poll';
import { explainFailure } from '../support/page-state';

let server: StaticServer;
/** The same build on a host that answers every unknown path with index.html (single-page-app hosting). */
let spaServer: StaticServer;
let hub: HubServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const modelDir = mkdtempSync(join(tmpdir(), 'agentflow-first-hour-model-'));
const shots = mkdtempSync(join(tmpdir(), 'agentflow-first-hour-shots-'));
const SUB = '/first/hour/';
const PLANNER_FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];

beforeAll(async () => {
  // Shapes unlike the toy task's model (hidden 32), so a toy adapter is one "made for another base".
  const { config, weights } = randomQwen2(13, { hiddenSize: 64, numHeads: 4, numKvHeads: 1, headDim: 16, intermediateSize: 96, numLayers: 2, vocabSize: 320 });
  for (const [name, bytes] of Object.entries(toHfFiles(config, weights, [BYTE_SPECIALS.im_end]))) writeFileSync(join(modelDir, name), bytes);
  writeFileSync(join(modelDir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(modelDir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  hub = await serveHub({ 'test-org/tiny-chat': modelDir, 'test-org/slow-chat': modelDir });
  server = await serveStatic({ [SUB]: outDir });
  spaServer = await serveStatic({ [SUB]: outDir }, { spaFallback: true, immutableAssets: true });
  browser = await launchChromium();
  console.info(`[ui-first-hour] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await spaServer?.close();
  await hub?.close();
});

interface Session {
  context: BrowserContext;
  page: Page;
  /** Uncaught page errors, and console errors (a CSP violation is one). */
  errors: string[];
}

async function fresh(hash: string, o: { width?: number; host?: StaticServer; context?: BrowserContext } = {}): Promise<Session> {
  const context = o.context ?? (await browser.newContext({ viewport: { width: o.width ?? 1200, height: 900 } }));
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    // A 404 is how a file's absence is learned (an optional file, a size probe); the browser logs each.
    if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 404/.test(m.text())) errors.push(m.text());
  });
  await page.goto(`${(o.host ?? server).url}${SUB}${hash}`);
  await page.locator('agentflow-app [role="tablist"]').waitFor();
  return { context, page, errors };
}

const enginesLine = (page: Page) => page.locator('agentflow-app [data-testid="engines"]');
/** The element's text as read: whitespace runs made single spaces, ends trimmed. */
const text = async (l: ReturnType<Page['locator']>) => ((await l.textContent()) ?? '').replace(/\s+/g, ' ').trim();

/** What the chat and the app showed, for a failed wait's message (see explainFailure). */
const CHAT_STATE = {
  engines: 'agentflow-app [data-testid="engines"]',
  'app notices': 'agentflow-app [data-testid="app-notice"], agentflow-app [data-testid="storage-banner"]',
  'swap question': 'agentflow-models-panel [data-testid="swap-confirm"]',
  input: 'agentflow-chat textarea',
  alerts: 'agentflow-chat [role="alert"]',
  live: 'agentflow-chat [data-testid="live"]',
  'calls so far': 'agentflow-chat [data-testid="live-calls"]',
  conversations: 'agentflow-chat [data-testid="conversation-list"] li',
  'live line seen': '#live-line-seen',
};

/**
 * Keeps every text the chat's live line shows from now on (read every 20 ms) in a hidden #live-line-seen
 * element, so a failed wait can say which states went by.
 */
async function recordLiveLine(page: Page): Promise<void> {
  await page.evaluate(() => {
    const out = document.createElement('pre');
    out.id = 'live-line-seen';
    out.hidden = true;
    document.body.append(out);
    let last = '';
    const t0 = performance.now();
    const timer = setInterval(() => {
      const chat = document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-chat');
      const live = chat?.shadowRoot?.querySelector('[data-testid="live"]');
      const now = (live?.textContent ?? '(none)').replace(/\s+/g, ' ').trim().replace(/\d+\.\d s/, '…s');
      if (now !== last) out.textContent += `${Math.round(performance.now() - t0)} ms: ${(last = now)}\n`;
      if (performance.now() - t0 > 60_000) clearInterval(timer);
    }, 20);
  });
}

async function loadPlanner(page: Page, base: string): Promise<void> {
  await page.getByRole('tab', { name: 'Models & GPU' }).click();
  await page.getByRole('textbox', { name: /Planner model/ }).fill(base);
  await page.getByRole('combobox', { name: /Shared model/ }).fill('');
  await page.getByRole('button', { name: 'Download and load models' }).click();
  await expect.poll(() => text(enginesLine(page)), { timeout: 120_000 }).toMatch(/^Engines: tiny-chat does every step: .* \(planner:tiny-chat, all modules\)/);
}

const tinyChat = () => `${hub.url}/test-org/tiny-chat/resolve/main/`;

describe("a user's first hour", () => {
  it('with no model, Chat says so and offers to load one or try the demo; demo answers are labelled as scripted', async () => {
    const { context, page, errors } = await fresh('#chat');
    expect(await text(enginesLine(page))).toContain('No model is loaded');
    const notice = page.locator('agentflow-chat [data-testid="no-model"]');
    await expect.poll(() => text(notice), { timeout: 30_000 }).toContain('No model is loaded, so the agent cannot answer yet.');
    await page.screenshot({ path: join(shots, 'chat-no-model.png'), fullPage: true });

    // Asking anyway is refused in place: nothing runs, the question stays to be sent later.
    const input = page.getByRole('textbox', { name: 'Your question' });
    await input.fill('What is the capital of France?');
    await input.press('Enter');
    const alert = page.locator('agentflow-chat [role="alert"]');
    await expect.poll(() => text(alert), { timeout: 30_000 }).toBe('No model is loaded, so nothing can answer yet: load a model, or try the scripted demo.');
    expect(await input.inputValue()).toBe('What is the capital of France?');
    expect(await page.locator('agentflow-chat [data-testid="conversation-list"] li').count()).toBe(0);

    // "Load a model" opens Models & GPU at the planner field.
    await notice.getByRole('button', { name: 'Load a model' }).click();
    await expect.poll(() => page.getByRole('tab', { name: 'Models & GPU' }).getAttribute('aria-selected')).toBe('true');
    await expect.poll(() => page.locator('agentflow-models-panel #planner-model').evaluate((el) => el.matches(':focus'))).toBe(true);

    // "Try the demo": the question now gets a scripted answer, labelled as such, from the base generator
    // (the demo hands Python arithmetic only, never the question as code).
    await page.getByRole('tab', { name: 'Chat' }).click();
    await notice.getByRole('button', { name: 'Try the demo' }).click();
    await expect.poll(() => text(enginesLine(page))).toMatch(/^Engines: scripted demo \(no model\) — answers are scripted/);
    await input.press('Enter');
    const answer = page.locator('agentflow-chat [data-testid="answer"]').first();
    await expect.poll(() => text(answer.locator('.text')), { timeout: 30_000 }).toContain('You asked: What is the capital of France?');
    await expect.poll(() => text(answer.locator('[data-testid="scripted-label"]')), { timeout: 30_000 }).toBe('Scripted demo: no model wrote this answer.');
    await answer.getByRole('button', { name: /Show trajectory/ }).click();
    const trajectory = await text(answer.locator('.trajectory'));
    expect(trajectory).toContain('base_generator');
    expect(trajectory).not.toContain('SyntaxError');

    // The sidebar shows the question, not "What is…": two lines, the whole question on hover.
    const item = page.locator('agentflow-chat [data-testid="conversation-list"] button.open').first();
    await expect.poll(() => item.getAttribute('title'), { timeout: 30_000 }).toBe('What is the capital of France?');
    expect(await item.evaluate((el) => el.scrollHeight <= el.clientHeight + 1 && el.scrollWidth <= el.clientWidth + 1)).toBe(true);
    await page.screenshot({ path: join(shots, 'chat-demo-answer.png'), fullPage: true });

    // Markup with an inline handler in an answer shows as text, and the page's CSP logs nothing.
    await input.fill('Say <img src=x onerror="alert(1)"> and **bold**');
    await input.press('Enter');
    // Each question is its own conversation, shown on its own: the first answer left the view (not the list).
    const second = page.locator('agentflow-chat [data-testid="answer"]').first().locator('.text');
    await expect.poll(() => text(second), { timeout: 30_000 }).toContain('<img src=x onerror="alert(1)">');
    // While the run is live its answer shows as plain text: wait for the finished, rendered one.
    await expect.poll(() => second.locator('strong').count(), { timeout: 30_000 }).toBe(1);
    expect(await second.locator('img').count()).toBe(0);
    expect(await page.locator('agentflow-chat [data-testid="answer"]').count()).toBe(1);
    expect(await page.locator('agentflow-chat [data-testid="conversation-list"] li').count()).toBe(2);

    // Each tool has one state that says whether it will run, here as in Models & GPU.
    await page.locator('agentflow-chat details.tools summary').click();
    const wiki = page.locator('agentflow-chat [data-tool="wikipedia"]');
    const state = wiki.locator('[data-testid="tool-state"]');
    expect(await text(state)).toBe('on, waiting for network permission');
    await wiki.getByRole('button', { name: 'Allow wikipedia to use the network' }).click();
    await expect.poll(() => text(state)).toBe('on');
    expect(await text(page.locator('agentflow-models-panel [data-tool="wikipedia"] [data-testid="tool-state"]'))).toBe('on');
    await page.screenshot({ path: join(shots, 'chat-tool-states.png'), fullPage: true });
    await wiki.getByRole('checkbox', { name: /^wikipedia/ }).uncheck();
    await expect.poll(() => text(state)).toBe('off');
    // Back on, it asks again: switching off withdrew the permission.
    await wiki.getByRole('checkbox', { name: /^wikipedia/ }).check();
    await expect.poll(() => text(state)).toBe('on, waiting for network permission');

    // Experiments on the demo say so, on the run and on its answers.
    await page.getByRole('tab', { name: 'Experiments' }).click();
    await page.locator('agentflow-experiments-panel [data-testid="benchmark-file"]').setInputFiles({ name: 'colours.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from('{"pid": "c1", "query": "Name a primary colour.", "answer": "red"}\n') });
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const run = page.locator('agentflow-experiments-panel [data-testid="runs"] tbody tr').first();
    await expect.poll(() => text(run), { timeout: 60_000 }).toMatch(/\(scripted demo\)done/);
    expect(await text(page.locator('agentflow-experiments-panel [data-testid="results"] [data-testid="scripted-label"]'))).toBe('Scripted demo: no model wrote these answers.');
    expect(await text(run.locator('td').first())).toMatch(/^A scripted demo · colours × 1 · 3 turns · \d{4}-\d\d-\d\d \d\d:\d\d \(scripted demo\)$/);
    // The run's conversation is not one of the user's questions: the chat lists it apart, folded.
    await page.getByRole('tab', { name: 'Chat' }).click();
    await poll(() => text(page.locator('agentflow-chat details[data-group="experiment"] summary'))).toBe('Experiment items (1)');
    expect(await page.locator('agentflow-chat [data-testid="conversation-list"] li').count()).toBe(2);
    await page.getByRole('tab', { name: 'Experiments' }).click();
    await page.screenshot({ path: join(shots, 'experiments-demo.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();

    // At phone width the notice and its actions fit the screen.
    const phone = await fresh('#chat', { width: 390 });
    const small = phone.page.locator('agentflow-chat [data-testid="no-model"]');
    await small.waitFor();
    expect(await small.evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(390);
    expect(await small.getByRole('button', { name: 'Try the demo' }).evaluate((el) => el.getBoundingClientRect().right)).toBeLessThanOrEqual(390);
    await phone.page.screenshot({ path: join(shots, 'chat-no-model-390.png'), fullPage: true });
    await phone.context.close();
  });

  it('checks the model id before fetching, never stores a web page as a model, and says when offline', async () => {
    const { context, page, errors } = await fresh('#models', { host: spaServer });
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    const field = page.getByRole('textbox', { name: /Planner model/ });
    const load = page.getByRole('button', { name: 'Download and load models' });
    const alert = page.locator('agentflow-models-panel [role="alert"]');
    await page.getByRole('combobox', { name: /Shared model/ }).fill('');

    // A repo id without its organisation: refused as typed, and on the click, before any request.
    const before = spaServer.requests.length;
    await field.fill('Qwen2.5-0.5B-Instruct');
    const fieldError = page.locator('agentflow-models-panel [data-testid="planner-model-error"]');
    await expect.poll(() => text(fieldError)).toContain("'Qwen2.5-0.5B-Instruct' is neither a Hugging Face repo id");
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    await load.click();
    await expect.poll(() => text(alert), { timeout: 30_000 }).toMatch(/^planner model: 'Qwen2\.5-0\.5B-Instruct' is neither a Hugging Face repo id \(organisation\/name, e\.g\. Qwen\/Qwen2\.5-0\.5B-Instruct\) nor a URL/);
    expect(spaServer.requests.slice(before).filter((r) => r.includes('Qwen2.5'))).toEqual([]);
    await page.screenshot({ path: join(shots, 'models-bad-id.png'), fullPage: true });

    // A path this host answers with its index.html: the page is refused as config.json and nothing is stored.
    await field.fill('./not-a-model');
    await load.click();
    await expect.poll(() => text(alert), { timeout: 60_000 }).toMatch(/\/first\/hour\/not-a-model\/config\.json is a web page, not the model file config\.json: check the model id or URL \(nothing was stored\)$/);
    expect(await page.evaluate(async () => (await (await caches.open('agentflow-models')).keys()).map((r) => r.url))).toEqual([]);
    await page.locator('agentflow-models-panel [data-testid="cache-empty"]').waitFor();

    // Offline (after the app, and its planner worker, loaded): the error says so, not just "Failed to fetch".
    await field.fill(tinyChat());
    await context.setOffline(true);
    await load.click();
    await expect.poll(() => text(alert), { timeout: 60_000 }).toContain(`download of ${tinyChat()}config.json failed: you appear to be offline (`);
    await page.screenshot({ path: join(shots, 'models-offline.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows the download size of both engines before the click, and then that it is all cached', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    // huggingface.co is answered from the tiny MLC fixture, as if it were web-llm's record for the shared
    // model, and its model library is a fixed-size stand-in: the size check has something to ask.
    const readJson = (f: string) => JSON.parse(readFileSync(join(TINY_MLC, f), 'utf8')) as Record<string, unknown>;
    const mlc: Record<string, Buffer> = Object.fromEntries(['mlc-chat-config.json', 'tensor-cache.json', 'params_shard_0.bin'].map((f) => [f, readFileSync(join(TINY_MLC, f))]));
    const LIB = 4321;
    const external: string[] = [];
    await context.route((url) => url.hostname !== '127.0.0.1', async (route) => {
      const url = new URL(route.request().url());
      external.push(`${route.request().method()} ${url.href}`);
      const m = /^\/mlc-ai\/[^/]+\/resolve\/main\/(.+)$/.exec(url.pathname);
      if (url.hostname === 'huggingface.co' && m) {
        const body = mlc[m[1]];
        return body ? route.fulfill({ status: 200, body, headers: { 'content-length': String(body.byteLength) } }) : route.fulfill({ status: 404, body: 'Entry not found' });
      }
      if (url.pathname.endsWith('.wasm')) return route.fulfill({ status: 200, body: Buffer.alloc(LIB), headers: { 'content-length': String(LIB) } });
      return route.abort('internetdisconnected');
    });
    const { page, errors } = await fresh('#models', { context });
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    await page.getByRole('textbox', { name: /Planner model/ }).fill(tinyChat());
    await page.getByRole('combobox', { name: /Shared model/ }).fill('Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
    const size = page.locator('agentflow-models-panel [data-testid="download-size"]');
    // Nothing is asked of any server until the user says so.
    await expect.poll(() => text(size)).toBe('Download size: Planner: not in this browser; size not checked yet; shared model: not in this browser; size not checked yet.');
    expect(external).toEqual([]);
    const requests = hub.requests.length;
    await page.getByRole('button', { name: 'Check download size' }).click();
    const planner = PLANNER_FILES.reduce((n, f) => n + statSync(join(modelDir, f)).size, 0);
    const records = (readJson('tensor-cache.json').records as Array<{ nbytes: number }>).reduce((n, r) => n + r.nbytes, 0);
    const shared = mlc['mlc-chat-config.json'].byteLength + mlc['tensor-cache.json'].byteLength + records + LIB;
    await expect.poll(() => text(size)).toBe(`Download size: Planner: ${formatBytes(planner)} to download; shared model: ${formatBytes(shared)} to download; in all ${formatBytes(planner + shared)}.`);
    // Sizes only: HEAD requests and the two small JSON indexes of the web-llm build; no weights came down.
    expect(external.filter((r) => !r.startsWith('HEAD'))).toEqual([expect.stringMatching(/^GET .*\/mlc-chat-config\.json$/), expect.stringMatching(/^GET .*\/tensor-cache\.json$/)]);
    expect(external.filter((r) => r.includes('params_shard'))).toEqual([]);
    expect(hub.requests.slice(requests).filter((r) => r.endsWith('model.safetensors'))).toHaveLength(1);
    await page.screenshot({ path: join(shots, 'models-download-size.png'), fullPage: true });

    // Once downloaded, the size line says loading downloads nothing.
    await page.getByRole('combobox', { name: /Shared model/ }).fill('');
    await page.getByRole('button', { name: 'Download and load models' }).click();
    await expect.poll(() => text(enginesLine(page)), { timeout: 120_000 }).toMatch(/^Engines: tiny-chat does every step: .* \(planner:tiny-chat, all modules\)/);
    await expect.poll(() => text(size)).toBe(`Download size: Planner: ${formatBytes(planner)}, all in this browser already.`);
    expect(errors).toEqual([]);
    await context.close();
  });

  it('brings the last model back on reload; cancels a load; refuses a question too long for it; asks before resuming on other engines; does not mark a refused adapter active', async () => {
    const { context, page, errors } = await fresh('#models');
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    await loadPlanner(page, tinyChat());

    // Reload: the model comes back from the cache, with progress, without a request to its server.
    const requests = hub.requests.length;
    await page.addInitScript(() => {
      const seen: unknown[] = ((window as unknown as { loadingSeen: unknown[] }).loadingSeen = []);
      document.addEventListener('agentflow-models-loading', (e) => seen.push((e as CustomEvent).detail), true);
    });
    await page.goto(`${server.url}${SUB}#chat`);
    await page.reload();
    await expect.poll(() => text(enginesLine(page)), { timeout: 120_000 }).toMatch(/^Engines: tiny-chat does every step: .* \(planner:tiny-chat, all modules\)/);
    expect(hub.requests.length).toBe(requests);
    const seen = (await page.evaluate(() => (window as unknown as { loadingSeen: unknown[] }).loadingSeen)) as Array<{ what: string; restoring: boolean; percent: number | null } | null>;
    expect(seen[0]).toEqual({ what: tinyChat(), restoring: true, percent: null });
    expect(seen.some((d) => d?.restoring && d.percent === 100)).toBe(true);
    expect(seen.at(-1)).toBeNull();
    // The form, on its hidden tab, holds the ids loaded.
    expect(await page.locator('agentflow-models-panel #planner-model').inputValue()).toBe(tinyChat());
    expect(await page.locator('agentflow-models-panel #shared-model').inputValue()).toBe('');
    await page.screenshot({ path: join(shots, 'reload-restored.png'), fullPage: true });

    // A question far beyond the model's context is refused before it runs, with its length and the limit.
    const input = page.getByRole('textbox', { name: 'Your question' });
    const long = 'Summarise this: ' + 'lorem ipsum '.repeat(8_400);
    await input.fill(long);
    await input.press('Enter');
    const alert = page.locator('agentflow-chat [role="alert"]');
    await expect.poll(() => text(alert), { timeout: 60_000 }).toMatch(/^This question is [\d,]+ tokens long, too long for planner:tiny-chat: it takes at most 1,024 tokens per call, and its first prompt with this question would need [\d,]+ tokens plus 256 for its reply\./);
    const tokens = Number(/This question is ([\d,]+) tokens/.exec(await text(alert))![1].replace(/,/g, ''));
    expect(tokens).toBeGreaterThan(100_000 / 2);
    expect(await input.inputValue()).toBe(long);
    expect(await page.locator('agentflow-chat [data-testid="conversation-list"] li').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'chat-too-long.png') });

    // A run on the demo, stopped while its tool works; then the planner again: Resume asks first.
    await input.fill('');
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    await page.getByRole('button', { name: 'Use the scripted demo' }).click();
    await page.getByRole('tab', { name: 'Chat' }).click();
    await input.fill('What is 6*7?');
    await recordLiveLine(page);
    await input.press('Enter');
    // The demo hands 6*7 to Python, whose first use loads Pyodide in its worker (seconds): the live line says so.
    await explainFailure(page, CHAT_STATE, () => page.locator('agentflow-chat [data-testid="live"]').getByText('Calling a tool (turn 1): starting Python (first use)…').waitFor({ timeout: 30_000 }));
    // The click event itself: the live view re-renders its timing every 250 ms, and on a loaded machine the
    // tool can finish while a pointer click waits for the button to hold still.
    await page.getByRole('button', { name: 'Stop' }).dispatchEvent('click');
    const listed = page.locator('agentflow-chat [data-testid="conversation-list"] li').first();
    await expect.poll(() => text(listed), { timeout: 30_000 }).toContain('interrupted');
    await loadPlanner(page, tinyChat());
    await page.getByRole('tab', { name: 'Chat' }).click();
    await page.getByRole('button', { name: 'Resume' }).click();
    const confirm = page.locator('agentflow-chat [data-testid="resume-confirm"]');
    await expect.poll(() => text(confirm), { timeout: 30_000 }).toContain('This run started on the scripted demo (planner:demo + shared:demo); the engines now are planner:tiny-chat (all modules).');
    await page.screenshot({ path: join(shots, 'chat-resume-confirm.png'), fullPage: true });
    await confirm.getByRole('button', { name: 'Keep it interrupted' }).click();
    await confirm.waitFor({ state: 'detached' });
    await expect.poll(() => text(listed), { timeout: 30_000 }).toContain('interrupted');
    const stored = await page.evaluate(
      () =>
        new Promise<unknown>((resolve, reject) => {
          const open = indexedDB.open('agentflow');
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const all = open.result.transaction('conversations').objectStore('conversations').getAll();
            all.onsuccess = () => resolve((all.result as Array<{ settings?: { engines?: unknown } }>).map((c) => c.settings?.engines));
          };
        }),
    );
    expect(stored).toEqual([{ planner: 'planner:demo', shared: 'shared:demo', scripted: true }]);

    // A load in progress can be cancelled from any tab; the engines in use stay.
    hub.faults.set('/test-org/slow-chat/resolve/main/model.safetensors', { delayMs: 120_000 });
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    await page.getByRole('textbox', { name: /Planner model/ }).fill(`${hub.url}/test-org/slow-chat/resolve/main/`);
    await page.getByRole('button', { name: 'Download and load models' }).click();
    await page.getByRole('tab', { name: 'Chat' }).click();
    await expect.poll(() => text(enginesLine(page)), { timeout: 30_000 }).toMatch(/^Loading .*slow-chat/);
    await page.screenshot({ path: join(shots, 'loading-cancellable.png'), fullPage: true });
    await enginesLine(page).getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => text(enginesLine(page))).toMatch(/^Engines: tiny-chat does every step: .* \(planner:tiny-chat, all modules\)/);
    expect(await text(page.locator('agentflow-models-panel [data-testid="models-notice"]'))).toMatch(/^Loading .*slow-chat.* was cancelled; nothing changed\.$/);

    // An adapter trained for the toy model is not offered to this planner: no Activate, and the row says why.
    await page.getByRole('tab', { name: 'Training' }).click();
    await page.getByRole('spinbutton', { name: 'Steps' }).fill('1');
    await page.getByText('Advanced: learning settings').click();
    await page.getByRole('spinbutton', { name: 'Group size' }).fill('2');
    await page.getByRole('button', { name: /Toy mode/ }).click();
    const adapters = page.locator('agentflow-training-panel [data-testid="adapters"] tbody tr');
    await adapters.first().waitFor({ timeout: 120_000 });
    await expect.poll(() => text(adapters.first())).toContain('Not for chat: made for the toy task’s tiny planner');
    expect(await adapters.first().getByRole('button', { name: /^Activate adapter / }).count()).toBe(0);
    expect(text(adapters.first())).not.toContain('(active)');
    await page.screenshot({ path: join(shots, 'adapter-refused.png'), fullPage: true });

    // The model deleted from the cache: the next start says so and downloads nothing on its own.
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    const cachedName = `${new URL(hub.url).host}/test-org/tiny-chat`;
    await page.getByRole('button', { name: `Delete cached model ${cachedName}` }).click();
    await page.getByRole('button', { name: `Yes, delete cached model ${cachedName}` }).click();
    await expect.poll(() => page.locator('agentflow-models-panel tbody tr', { hasText: cachedName }).count()).toBe(0);
    const before = hub.requests.length;
    await page.reload();
    const gone = page.locator('agentflow-models-panel [data-testid="models-notice"]');
    await expect.poll(() => text(gone), { timeout: 60_000 }).toBe(
      `Your last models (${tinyChat()}) were not reloaded: the planner tiny-chat is not (all) in this browser's cache any more. Press “Download and load models” to download them again.`,
    );
    expect(await text(enginesLine(page))).toContain('No model is loaded');
    expect(hub.requests.length).toBe(before);
    expect(errors).toEqual([]);
    await context.close();
  });
});
