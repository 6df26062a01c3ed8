// The production build as an offline app, and the Models tab's words when a load cannot reach a host (issue
// #28). After one online visit the service worker has precached the app: with the browser context offline the
// page opens, the planner last loaded comes back from its cache, a load whose shared web-llm model cannot be
// downloaded offers to go on with the planner alone and names the host, the download-size check says the size
// is unknown and why, and the demo and Python run. Online: a model folder on another origin without CORS
// headers is explained, `models/x` gets a hint, stale errors and bars go when the form changes, the size line
// and the finished bar agree, the words put plain labels first, and at 390 px the Models tab has no clipped or
// word-per-line text. The app is built once; each scenario starts a fresh browser context.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../support/byte-tokenizer';
import { launchChromium } from '../support/chromium';
import { randomQwen2, toHfFiles } from '../support/random-qwen2';
import { serveStatic, type StaticServer } from '../support/static-server';
import { formatBytes } from '../../src/controllers/progress-tracker';
import { poll } from '../support/poll';
import { explainFailure } from '../support/page-state';
import { startDevServer } from '../support/vite-server';

let server: StaticServer;
/** The same model folder on another origin, served as `python3 -m http.server` serves it: no CORS headers. */
let otherOrigin: StaticServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const modelsDir = mkdtempSync(join(tmpdir(), 'agentflow-offline-models-'));
const modelDir = join(modelsDir, 'tiny-chat');
const shots = mkdtempSync(join(tmpdir(), 'agentflow-offline-shots-'));
const SUB = '/offline/app/';
const PLANNER_FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];

beforeAll(async () => {
  mkdirSync(modelDir);
  const { config, weights } = randomQwen2(17, { hiddenSize: 32, numHeads: 2, numKvHeads: 1, headDim: 16, intermediateSize: 64, numLayers: 2, vocabSize: 320 });
  for (const [name, bytes] of Object.entries(toHfFiles(config, weights, [BYTE_SPECIALS.im_end]))) writeFileSync(join(modelDir, name), bytes);
  writeFileSync(join(modelDir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(modelDir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  // The planner as a folder beside the app, on its own site: './models/tiny-chat'.
  server = await serveStatic({ [SUB]: outDir, [`${SUB}models/`]: modelsDir });
  otherOrigin = await serveStatic({ '/': modelsDir });
  browser = await launchChromium();
  console.info(`[offline-app] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await otherOrigin?.close();
});

/** The element's text as read: whitespace runs made single spaces, ends trimmed. */
const text = async (l: Locator) => ((await l.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const enginesLine = (page: Page) => page.locator('agentflow-app [data-testid="engines"]');
const PANEL = 'agentflow-models-panel';

const STATE = {
  engines: 'agentflow-app [data-testid="engines"]',
  'models alert': `${PANEL} [role="alert"]`,
  'models notice': `${PANEL} [data-testid="models-notice"]`,
  'download size': `${PANEL} [data-testid="download-size"]`,
  progress: `${PANEL} .progress`,
  answer: 'agentflow-chat [data-testid="answer"]',
  live: 'agentflow-chat [data-testid="live"]',
};

async function open(context: BrowserContext, hash: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}${SUB}${hash}`);
  await page.locator('agentflow-app [role="tablist"]').waitFor();
  return { page, errors };
}

/** A rank-2 PEFT adapter on q_proj of both layers of the planner above (hidden 32, 2 heads of 16). */
const ADAPTER_TENSORS = Object.fromEntries(
  [0, 1].flatMap((l) => [
    [`base_model.model.model.layers.${l}.self_attn.q_proj.lora_A.weight`, { shape: [2, 32], data: Array.from({ length: 64 }, (_, i) => Math.sin(i + l) / 8) }],
    [`base_model.model.model.layers.${l}.self_attn.q_proj.lora_B.weight`, { shape: [32, 2], data: Array.from({ length: 64 }, (_, i) => Math.cos(i + l) / 8) }],
  ]),
);

const PLANNER_ALONE = /^Engines: tiny-chat does every step: plans, runs tools, checks and answers \(planner:tiny-chat, all modules\)/;

describe('the built site as an offline app', () => {
  it('after one online visit opens offline, brings back the cached planner, offers the planner alone when the shared model is out of reach, and runs the demo and Python', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const { page, errors } = await open(context, '#models');
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    await page.getByRole('textbox', { name: /Planner model/ }).fill('./models/tiny-chat');
    await page.getByRole('combobox', { name: /Shared model/ }).fill('');
    await page.getByRole('button', { name: 'Download and load models' }).click();
    await explainFailure(page, STATE, () => poll(() => text(enginesLine(page)), 120_000).toMatch(PLANNER_ALONE));
    // The service worker is active once it has precached the app shell, its workers and Pyodide.
    await poll(() => page.evaluate(async () => (await navigator.serviceWorker.getRegistration())?.active?.state ?? 'none'), 120_000).toBe('activated');

    await context.setOffline(true);
    await page.reload();
    await page.locator('agentflow-app [role="tablist"]').waitFor({ timeout: 60_000 });
    expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
    // The last planner comes back from this browser's cache, offline.
    await explainFailure(page, STATE, () => poll(() => text(enginesLine(page)), 120_000).toMatch(PLANNER_ALONE));

    // The form's default shared model (web-llm, from huggingface.co): its size cannot be checked offline.
    await page.getByRole('tab', { name: 'Models & GPU' }).click();
    await page.getByRole('combobox', { name: /Shared model/ }).fill('Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
    const size = page.locator(`${PANEL} [data-testid="download-size"]`);
    await poll(() => text(size)).toContain('shared model: not in this browser; size not checked yet');
    await page.getByRole('button', { name: 'Check download size' }).click();
    await explainFailure(page, STATE, () => poll(() => text(size)).toMatch(/shared model: size unknown, huggingface\.co( and [\w.]+)? could not be reached \(you appear to be offline\)\.$/));
    expect(await text(size)).not.toContain('0 B to download');

    // Loading both: the planner loads from the cache, web-llm cannot download; the page offers the planner alone.
    await page.getByRole('button', { name: 'Download and load models' }).click();
    const offer = page.locator(`${PANEL} [data-testid="partial-load"]`);
    await explainFailure(page, STATE, () =>
      poll(() => text(offer), 120_000).toMatch(
        /^The planner loaded, but the shared model Qwen2\.5-1\.5B-Instruct-q4f(16|32)_1-MLC could not be loaded: huggingface\.co could not be reached \(you appear to be offline\), so its files could not be downloaded\. The planner, tiny-chat, can do every step on its own/,
      ),
    );
    await page.screenshot({ path: join(shots, 'partial-load-offer.png'), fullPage: true });
    // The offer, the offline size line and the form fit a phone.
    await page.setViewportSize({ width: 390, height: 844 });
    await poll(() => page.evaluate(() => innerWidth)).toBe(390);
    expect(await crampedText(page, 390)).toEqual([]);
    await page.screenshot({ path: join(shots, 'partial-load-offer-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1200, height: 900 });
    await offer.getByRole('button', { name: 'Go on with the planner alone' }).click();
    await poll(() => text(enginesLine(page))).toMatch(PLANNER_ALONE);
    expect(await page.locator(`${PANEL} #shared-model`).inputValue()).toBe('');
    expect(await offer.count()).toBe(0);

    // The scripted demo, and Python (Pyodide from the precache), offline.
    await page.getByRole('button', { name: 'Use the scripted demo' }).click();
    await page.getByRole('tab', { name: 'Chat' }).click();
    const input = page.getByRole('textbox', { name: 'Your question' });
    await input.fill('What is 6*7?');
    await input.press('Enter');
    const answer = page.locator('agentflow-chat [data-testid="answer"]').first().locator('.text');
    await explainFailure(page, STATE, () => poll(() => text(answer), 180_000).toBe('42'));
    await page.screenshot({ path: join(shots, 'offline-demo-python.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });
});

describe('the dev server', () => {
  it('registers no service worker, so `npm start` always serves the current source', async () => {
    const dev = await startDevServer();
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${dev.base}/#chat`);
      await page.locator('agentflow-app [role="tablist"]').waitFor({ timeout: 120_000 });
      // The page's load event has passed (when a build's registerSW.js registers): still no worker.
      await page.waitForFunction(() => document.readyState === 'complete');
      expect(await page.evaluate(async () => (await navigator.serviceWorker.getRegistrations()).length)).toBe(0);
      expect(await page.locator('script[src*="registerSW"]').count()).toBe(0);
    } finally {
      await context.close();
      await dev.close();
    }
  });
});

/**
 * Text in the Models tab that a phone would clip (a line past the right edge, outside a box that scrolls) or
 * squeeze to a word per line (a text node of three or more words laid out on as many lines), as
 * "tag.class: text" lines.
 */
function crampedText(page: Page, width: number): Promise<string[]> {
  return page.evaluate((w) => {
    const out: string[] = [];
    const scrolls = (el: Element | null): boolean => {
      for (let e = el; e; e = (e.parentElement ?? ((e.getRootNode() as ShadowRoot).host as Element | undefined)) ?? null) {
        if (/auto|scroll/.test(getComputedStyle(e).overflowX)) return true;
      }
      return false;
    };
    const visit = (root: Document | ShadowRoot) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const t = (n.textContent ?? '').replace(/\s+/g, ' ').trim();
        const el = n.parentElement;
        if (!t || !el || el.closest('[hidden]') || getComputedStyle(el).display === 'none') continue;
        const range = document.createRange();
        range.selectNodeContents(n);
        const lines = [...range.getClientRects()].filter((r) => r.width > 0);
        if (!lines.length) continue;
        const words = t.split(' ').length;
        const label = `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(' ')[0]}` : ''}: ${t.slice(0, 60)}`;
        if (words >= 3 && lines.length >= words) out.push(`word per line (${lines.length} lines): ${label}`);
        if (lines.some((r) => r.right > w + 1) && !scrolls(el)) out.push(`clipped (right ${Math.round(Math.max(...lines.map((r) => r.right)))}): ${label}`);
      }
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
    };
    const panel = document.querySelector('agentflow-app')!.shadowRoot!.querySelector('agentflow-models-panel')!;
    visit(panel.shadowRoot!);
    return out;
  }, width);
}

describe('Models & GPU in words', () => {
  it('explains a folder without CORS headers and a repo id meant as a folder, clears stale errors and bars, and its size line and bar agree', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const { page, errors } = await open(context, '#models');
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    const field = page.getByRole('textbox', { name: /Planner model/ });
    const load = page.getByRole('button', { name: 'Download and load models' });
    const alert = page.locator(`${PANEL} [role="alert"]`);
    await page.getByRole('combobox', { name: /Shared model/ }).fill('');

    // Plain labels first, the WebGPU term second.
    expect(await text(page.locator('gpu-capabilities dt', { hasText: 'shader-f16' }))).toBe('Half-precision maths shader-f16');
    expect(await text(page.locator('gpu-capabilities [data-testid="f16"]'))).toBe('no: the planner packs half-precision numbers itself, a little slower (packed-f16 fallback)');

    // 'models/x' is a Hugging Face repo id: the field says so, in the text colour, and how to name a folder.
    await field.fill('models/tiny-chat');
    const note = page.locator(`${PANEL} [data-testid="planner-model-note"]`);
    await poll(() => text(note)).toBe('Read as the Hugging Face repo models/tiny-chat (downloaded from huggingface.co). For a folder on this site, write ./models/tiny-chat');
    const colours = await note.evaluate((el) => [getComputedStyle(el).color, getComputedStyle(el.getRootNode() instanceof ShadowRoot ? (el.getRootNode() as ShadowRoot).host : document.body).color]);
    expect(colours[0]).toBe(colours[1]);

    // The folder on another origin with no CORS headers: the error says what to do.
    await field.fill(`${otherOrigin.url}/tiny-chat/`);
    await expect.poll(() => note.count()).toBe(0);
    await load.click();
    await explainFailure(page, STATE, () =>
      poll(() => text(alert), 60_000).toContain(`${otherOrigin.url} is another origin than this page (${server.url}): a server there must send CORS headers (Access-Control-Allow-Origin)`),
    );
    expect(await text(alert)).toContain('python3 -m http.server');
    expect(await text(alert)).toContain("Serve the folder from this app's own site (put it beside index.html and enter ./tiny-chat)");
    await page.screenshot({ path: join(shots, 'cors-advice.png'), fullPage: true });
    // Editing the field: the error no longer applies and goes.
    await field.fill('./models/tiny-chat');
    await poll(() => alert.count()).toBe(0);

    // A load from the app's own site: the finished bar and the size line give the same size.
    await load.click();
    await explainFailure(page, STATE, () => poll(() => text(enginesLine(page)), 120_000).toMatch(PLANNER_ALONE));
    expect(await text(page.locator(`${PANEL} [data-testid="engines-in-use"]`))).toBe('tiny-chat does every step: plans, runs tools, checks and answers (planner:tiny-chat, all modules)');
    const total = formatBytes(PLANNER_FILES.reduce((n, f) => n + statSync(join(modelDir, f)).size, 0));
    const size = page.locator(`${PANEL} [data-testid="download-size"]`);
    const bar = page.locator(`${PANEL} [data-testid="progress-planner"] label`);
    await explainFailure(page, STATE, () => poll(() => text(size)).toBe(`Download size: Planner: ${total}, all in this browser already.`));
    await poll(() => text(bar)).toBe(`Planner: ${total} of ${total} (100%)`);

    // With a stored adapter (as a training run keeps it, under an id), the engines line names it by its name.
    await page.evaluate(
      ({ tensors }) =>
        new Promise<void>((resolve, reject) => {
          const req = indexedDB.open('agentflow');
          req.onerror = () => reject(req.error);
          req.onsuccess = () => {
            const tx = req.result.transaction('adapters', 'readwrite');
            const rec = {
              id: 'agent-run-7f3a-step-12',
              name: 'my tuned planner',
              createdAt: Date.now(),
              baseModel: 'tiny-chat',
              config: { peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: ['q_proj'] },
              tensors: Object.fromEntries(Object.entries(tensors).map(([k, t]) => [k, { shape: t.shape, data: Float32Array.from(t.data) }])),
            };
            tx.objectStore('adapters').put(rec);
            tx.oncomplete = () => resolve();
            tx.onerror = () => reject(tx.error);
          };
        }),
      { tensors: ADAPTER_TENSORS },
    );
    await page.getByRole('textbox', { name: /LoRA adapter/ }).fill('agent-run-7f3a-step-12');
    await load.click();
    await explainFailure(page, STATE, () => poll(() => text(enginesLine(page)), 120_000).toMatch(/^Engines: tiny-chat does every step: .* \[adapter “my tuned planner”\]$/));
    await page.getByRole('textbox', { name: /LoRA adapter/ }).fill('');

    // A new load refused before it starts: its error shows with no bar of the last load beside it.
    await field.fill('tiny-chat');
    await poll(() => bar.count()).toBe(0);
    await load.click();
    await poll(() => text(alert)).toMatch(/^planner model: 'tiny-chat' is neither a Hugging Face repo id/);
    expect(await page.locator(`${PANEL} .progress`).count()).toBe(0);

    // At phone width nothing in the tab is clipped or squeezed to a word per line.
    await field.fill('./models/tiny-chat');
    await page.setViewportSize({ width: 390, height: 844 });
    await poll(() => page.evaluate(() => innerWidth)).toBe(390);
    await page.screenshot({ path: join(shots, 'models-390.png'), fullPage: true });
    expect(await crampedText(page, 390)).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });
});
