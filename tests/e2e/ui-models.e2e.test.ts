// Models & GPU with a real (tiny, random) Qwen2 planner served in the hub's URL layout: loading shows
// per-model progress with bytes and percent, the engines switch to the planner, the download appears in
// the cached-models list with its size, and a question the model's context cannot hold is refused up front.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../support/byte-tokenizer';
import { launchChromium } from '../support/chromium';
import { serveHub, type HubServer } from '../support/hub-server';
import { randomQwen2, toHfFiles } from '../support/random-qwen2';
import { serveStatic, type StaticServer } from '../support/static-server';
import { MLC_MANIFEST_05B, TINY_MLC } from '../../src/io/test-fixtures';

let server: StaticServer;
let hub: HubServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const modelDir = mkdtempSync(join(tmpdir(), 'agentflow-tiny-chat-'));
const shots = mkdtempSync(join(tmpdir(), 'agentflow-models-shots-'));
const SUB = '/models/app/';

beforeAll(async () => {
  const { config, weights } = randomQwen2(11, { hiddenSize: 32, numHeads: 2, numKvHeads: 1, headDim: 16, intermediateSize: 64, numLayers: 2, vocabSize: 320 });
  for (const [name, bytes] of Object.entries(toHfFiles(config, weights, [BYTE_SPECIALS.im_end]))) writeFileSync(join(modelDir, name), bytes);
  writeFileSync(join(modelDir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(modelDir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  hub = await serveHub({ 'test-org/tiny-chat': modelDir });
  server = await serveStatic({ [SUB]: outDir });
  browser = await launchChromium();
  console.info(`[ui-models] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await hub?.close();
});

describe('Models & GPU with a real planner', () => {
  it('downloads with progress, switches the engines, lists the cached model, and refuses a question its context cannot hold', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}${SUB}#models`);
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    const base = `${hub.url}/test-org/tiny-chat/resolve/main/`;
    await page.getByRole('textbox', { name: /Planner model/ }).fill(base);
    await page.getByRole('combobox', { name: /Shared model/ }).fill('');
    await page.getByRole('button', { name: 'Download and load models' }).click();
    const inUse = page.locator('agentflow-models-panel [data-testid="engines-in-use"]');
    await page.waitForFunction(
      () => /\(planner:/.test(document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-models-panel')?.shadowRoot?.querySelector('[data-testid="engines-in-use"]')?.textContent ?? ''),
      undefined,
      { timeout: 120_000 },
    );
    expect(await inUse.textContent()).toMatch(/\(planner:.*, all modules\)$/);
    const total = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'].reduce((s, f) => s + statSync(join(modelDir, f)).size, 0);
    const progress = (await page.locator('agentflow-models-panel [data-testid="progress-planner"] label').textContent()) ?? '';
    expect(progress).toMatch(/Planner: .* \(100%\)/);
    expect(await page.locator('agentflow-models-panel [data-testid="progress-planner"] progress').evaluate((p) => (p as HTMLProgressElement).value)).toBe(100);
    const row = page.locator('agentflow-models-panel [data-testid="cached-models"] tbody tr');
    await expect.poll(() => row.first().locator('td').count(), { timeout: 30_000 }).toBeGreaterThan(2);
    const cells = await row.first().locator('td').allTextContents();
    expect(cells[0]).toBe(`${new URL(hub.url).host}/test-org/tiny-chat`);
    // Every file the planner read is cached (optional files the checkpoint lacks are remembered as absent, not listed).
    expect(Number(cells[1])).toBeGreaterThanOrEqual(4);
    expect(total).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, 'models-loaded.png'), fullPage: true });

    // This tiny model's 1024-token context is too short for the agent's prompts: the chat says so before
    // running anything (counted with the planner's own tokenizer and template), instead of storing a run in
    // which every module fails on the context limit.
    await page.getByRole('tab', { name: 'Chat' }).click();
    expect(await page.locator('agentflow-app [data-testid="engines"]').textContent()).toContain('planner:tiny-chat');
    await page.getByRole('textbox', { name: 'Your question' }).fill('hello');
    await page.keyboard.press('Enter');
    const alert = page.locator('agentflow-chat [role="alert"]');
    await expect.poll(async () => (await alert.count()) ? await alert.textContent() : '', { timeout: 60_000 }).toMatch(
      /^This question is \d+ tokens long, too long for planner:tiny-chat: it takes at most 1,024 tokens per call, and its first prompt with this question would need [\d,]+ tokens plus 256 for its reply\. Even a short question does not fit this model; load one with a longer context\.$/,
    );
    expect(await page.locator('agentflow-chat [data-testid="conversation-list"] li').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'chat-context-too-short.png'), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it("loads the planner from the shared model's web-llm build (one download, into web-llm's cache), offline up to web-llm's clear error", async () => {
    // huggingface.co is answered from the tiny MLC fixture, as if it were web-llm's record for the model;
    // tokenizer_config.json (which web-llm never downloads) cannot be fetched, as when offline, so the
    // planner's chat template comes from mlc-chat-config.json's conv_template. Everything else off this
    // machine (web-llm's model library) fails: web-llm then stops with its download error.
    const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8'));
    const chat = { ...readJson(join(TINY_MLC, 'mlc-chat-config.json')), tokenizer_files: ['tokenizer.json', 'tokenizer_config.json'], conv_template: readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json')).conv_template };
    const files: Record<string, Buffer> = {
      'mlc-chat-config.json': Buffer.from(JSON.stringify(chat)),
      'tensor-cache.json': readFileSync(join(TINY_MLC, 'tensor-cache.json')),
      'params_shard_0.bin': readFileSync(join(TINY_MLC, 'params_shard_0.bin')),
      'tokenizer.json': Buffer.from(JSON.stringify(byteTokenizerJson())),
    };
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const hf: string[] = [];
    const elsewhere: string[] = [];
    await context.route((url) => !url.href.startsWith(server.url), async (route) => {
      const url = new URL(route.request().url());
      const m = /^\/mlc-ai\/([^/]+)\/resolve\/main\/(.+)$/.exec(url.pathname);
      if (url.host !== 'huggingface.co' || !m) {
        elsewhere.push(url.href);
        return route.abort('internetdisconnected');
      }
      hf.push(`${m[1]}/${m[2]}`);
      const body = files[m[2]];
      if (m[2] === 'tokenizer_config.json') return route.abort('internetdisconnected');
      return body ? route.fulfill({ status: 200, body, headers: { 'content-length': String(body.byteLength) } }) : route.fulfill({ status: 404, body: 'not found' });
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}${SUB}#models`);
    await page.locator('gpu-capabilities [data-testid="gpu-report"]').waitFor({ timeout: 60_000 });
    await page.getByRole('combobox', { name: /Shared model/ }).fill('Qwen2.5-0.5B-Instruct-q4f16_1-MLC');
    await page.getByRole('checkbox', { name: /Planner uses the shared model's download/ }).check();
    expect(await page.getByRole('textbox', { name: /Planner model/ }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Download and load models' }).click();
    const alert = page.locator('agentflow-models-panel [role="alert"]');
    await alert.waitFor({ timeout: 180_000 });
    // SwiftShader has no shader-f16: web-llm would run the q4f32_1 build, so the planner reads that one too.
    const repo = 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC';
    expect(hf.filter((f) => f === `${repo}/params_shard_0.bin`)).toHaveLength(1);
    expect(hf).toContain(`${repo}/tokenizer_config.json`);
    expect(hf.every((f) => f.startsWith(`${repo}/`))).toBe(true);
    // The planner stored what it downloaded where web-llm looks (its Cache Storage, under its keys)...
    const base = `https://huggingface.co/mlc-ai/${repo}/resolve/main/`;
    const keys = await page.evaluate(async () => (await (await caches.open('webllm/model')).keys()).map((r) => r.url));
    expect(keys).toEqual(expect.arrayContaining([`${base}tensor-cache.json`, `${base}params_shard_0.bin`, `${base}tokenizer.json`]));
    // ...and web-llm read its config from there (no file of the model was asked for twice); its one request
    // was its compiled model library, which the planner does not need, and which fails here.
    expect(new Set(hf).size).toBe(hf.length);
    expect(elsewhere).toHaveLength(1);
    expect(elsewhere[0]).toMatch(/\/Qwen2-0\.5B-Instruct-q4f32_1[^/]*-webgpu\.wasm$/);
    expect(await alert.textContent()).toMatch(/The model 'Qwen2\.5-0\.5B-Instruct-q4f32_1-MLC' could not be downloaded/);
    expect(await page.locator('agentflow-models-panel [data-testid="engines-in-use"]').textContent()).not.toMatch(/planner:/);
    expect(errors).toEqual([]);
    await context.close();
  });
});
