// Adapters through the Training tab's file pickers, on the production build: a toy run stores an adapter,
// Export downloads one zip holding a folder with its two PEFT files, Import reads them back under a new name with the same tensors,
// corrupt or wrong-shaped files are refused with the file and tensor named and nothing stored changes,
// and a new run starts from the imported adapter.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { unzipSync } from 'fflate';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { readSafetensors, writeSafetensors } from '../../src/io/safetensors';
import { launchChromium } from '../support/chromium';
import { serveStatic, type StaticServer } from '../support/static-server';

let server: StaticServer;
let browser: Browser;
// The app as `npm run build` makes it, built once for the e2e project (tests/support/e2e-app-build.ts).
const outDir = inject('appDir');
const saved = mkdtempSync(join(tmpdir(), 'agentflow-adapter-downloads-'));
const SUB = '/adapters/app/';

beforeAll(async () => {
  server = await serveStatic({ [SUB]: outDir });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

interface StoredAdapter {
  id: string;
  name: string;
  baseModel: string;
  config: Record<string, unknown>;
  tensors: Record<string, { shape: number[]; data: number[] }>;
}

/** Every adapter in the page's IndexedDB, read with the plain IndexedDB API (not the app's code). */
function storedAdapters(page: Page): Promise<StoredAdapter[]> {
  return page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((res, rej) => {
      const r = indexedDB.open('agentflow');
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const all = await new Promise<Array<{ id: string; name: string; baseModel: string; config: Record<string, unknown>; tensors: Record<string, { shape: number[]; data: Float32Array }> }>>((res) => {
      const q = db.transaction('adapters').objectStore('adapters').getAll();
      q.onsuccess = () => res(q.result);
    });
    db.close();
    return all.map((a) => ({ ...a, tensors: Object.fromEntries(Object.entries(a.tensors).map(([k, t]) => [k, { shape: t.shape, data: Array.from(t.data) }])) }));
  });
}

function runRecord(page: Page, id: string): Promise<{ config: Record<string, unknown> } | undefined> {
  return page.evaluate(async (runId) => {
    const db = await new Promise<IDBDatabase>((res, rej) => {
      const r = indexedDB.open('agentflow');
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const rec = await new Promise<{ config: Record<string, unknown> } | undefined>((res) => {
      const q = db.transaction('trainingRuns').objectStore('trainingRuns').get(runId);
      q.onsuccess = () => res(q.result);
    });
    db.close();
    return rec;
  }, id);
}

const panelText = (page: Page, selector: string) =>
  page.evaluate((sel) => document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector(sel)?.textContent ?? '', selector);

const waitStatus = (page: Page, re: RegExp) =>
  page.waitForFunction(
    (src) => new RegExp(src).test(document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-status"]')?.textContent ?? ''),
    re.source,
    { timeout: 120_000, polling: 50 },
  );

/** Text in the Training tab's adapters list (<agentflow-training-adapters>, inside the panel). */
const adaptersText = (page: Page, selector: string) =>
  page.evaluate(
    (sel) =>
      document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('agentflow-training-adapters')?.shadowRoot?.querySelector(sel)?.textContent ?? '',
    selector,
  );

const waitAlert = (page: Page, re: RegExp) =>
  page.waitForFunction(
    (src) =>
      new RegExp(src).test(
        document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('agentflow-training-adapters')?.shadowRoot?.querySelector('[role="alert"]')?.textContent ?? '',
      ),
    re.source,
    { timeout: 30_000 },
  );

async function importFiles(page: Page, config: { name: string; buffer: Buffer }, weights: { name: string; buffer: Buffer }, name = ''): Promise<void> {
  await page.locator('agentflow-training-panel #import-config').setInputFiles({ ...config, mimeType: 'application/json' });
  await page.locator('agentflow-training-panel #import-weights').setInputFiles({ ...weights, mimeType: 'application/octet-stream' });
  await page.getByRole('textbox', { name: 'Name (optional)' }).fill(name);
  await page.getByRole('button', { name: 'Import', exact: true }).click();
}

describe('adapter export and import in the Training tab', () => {
  it('exports an adapter, imports it back under a new name with equal tensors, refuses bad files, and trains from the import', async () => {
    const context = await browser.newContext({ viewport: { width: 1200, height: 1000 }, acceptDownloads: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${server.url}${SUB}#training`);
    await page.getByRole('spinbutton', { name: 'Training steps' }).fill('1');
    await page.getByText('Advanced: learning settings').click();
    await page.getByRole('spinbutton', { name: 'Group size' }).fill('2');
    await page.getByRole('button', { name: /Toy mode/ }).click();
    await waitStatus(page, /^Done: step 1 /);
    const rows = page.locator('agentflow-training-panel [data-testid="adapters"] tbody tr');
    await rows.first().waitFor();
    const [source] = await storedAdapters(page);
    expect(source.name).toMatch(/^toy-.* step 1$/);

    // Export: one zip, a folder with PEFT's two file names (what from_pretrained reads), holding what is stored.
    const downloads: import('playwright-core').Download[] = [];
    page.on('download', (d) => downloads.push(d));
    await page.getByRole('button', { name: `Export adapter ${source.name}` }).click();
    await expect.poll(() => downloads.length, { timeout: 30_000 }).toBe(1);
    const base = source.name.replace(/[^\w.-]+/g, '_').replace(/^[._]+|[._]+$/g, '');
    expect(downloads[0].suggestedFilename()).toBe(`${base}.zip`);
    const zipPath = join(saved, downloads[0].suggestedFilename());
    await downloads[0].saveAs(zipPath);
    const files = unzipSync(new Uint8Array(readFileSync(zipPath)));
    expect(Object.keys(files).filter((n) => !n.endsWith('/')).sort()).toEqual([`${base}/adapter_config.json`, `${base}/adapter_model.safetensors`]);
    const configBytes = Buffer.from(files[`${base}/adapter_config.json`]);
    const weightBytes = Buffer.from(files[`${base}/adapter_model.safetensors`]);
    expect(JSON.parse(configBytes.toString('utf8'))).toEqual(source.config);
    const st = readSafetensors(new Uint8Array(weightBytes), 'exported');
    expect(st.names().sort()).toEqual(Object.keys(source.tensors).sort());
    for (const n of st.names()) {
      expect(st.descriptor(n).shape).toEqual(source.tensors[n].shape);
      expect(Array.from(st.f32(n))).toEqual(source.tensors[n].data);
    }

    // Import the downloaded files back under a new name.
    await importFiles(page, { name: 'adapter_config.json', buffer: configBytes }, { name: 'adapter_model.safetensors', buffer: weightBytes }, 'round-trip');
    await expect.poll(() => adaptersText(page, '[data-testid="import-status"]'), { timeout: 30_000 }).toBe('Imported “round-trip” from adapter_model.safetensors.');
    expect(await adaptersText(page, '[role="alert"]')).toBe('');
    expect(await panelText(page, '[role="alert"]')).toBe('');
    const afterImport = await storedAdapters(page);
    expect(afterImport).toHaveLength(2);
    const imported = afterImport.find((a) => a.name === 'round-trip')!;
    expect(imported.id).not.toBe(source.id);
    expect(imported.baseModel).toBe('agentflow-toy');
    expect(imported.tensors).toEqual(source.tensors);
    expect(await rows.count()).toBe(2);

    // A corrupt weights file, a wrong-shaped one and a broken config: each refused, naming what is wrong.
    const corrupt = Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37 + 11) % 256));
    await importFiles(page, { name: 'adapter_config.json', buffer: configBytes }, { name: 'corrupt.adapter_model.safetensors', buffer: corrupt });
    await waitAlert(page, /^Import failed: corrupt\.adapter_model\.safetensors/);
    const aName = st.names().find((n) => n.endsWith('lora_A.weight'))!;
    const r = st.descriptor(aName).shape[0];
    const wrong = writeSafetensors(
      st.names().map((n) => {
        const shape = [...st.descriptor(n).shape];
        if (n !== aName) return { name: n, shape, data: st.f32(n) };
        return { name: n, shape: [r + 1, shape[1]], data: new Float32Array((r + 1) * shape[1]) };
      }),
    );
    await importFiles(page, { name: 'adapter_config.json', buffer: configBytes }, { name: 'wrong-shape.adapter_model.safetensors', buffer: Buffer.from(wrong) });
    await waitAlert(page, /^Import failed: wrong-shape\.adapter_model\.safetensors: /);
    const wrongMessage = await adaptersText(page, '[role="alert"]');
    expect(wrongMessage).toContain(`'${aName}' [${r + 1}, `);
    expect(wrongMessage).toContain(`disagree with r=${r} in adapter_config.json`);
    await importFiles(page, { name: 'broken.json', buffer: Buffer.from('{"peft_type": "LORA", ') }, { name: 'fine.safetensors', buffer: weightBytes });
    await waitAlert(page, /^Import failed: broken\.json is not valid JSON/);
    // Nothing was added or changed by the refused files.
    expect(await storedAdapters(page)).toEqual(afterImport);
    expect(await rows.count()).toBe(2);

    // A new toy run starts from the imported adapter and says so.
    await page.getByRole('combobox', { name: 'Start from' }).selectOption({ label: 'round-trip' });
    expect(await page.getByRole('spinbutton', { name: 'LoRA rank' }).isDisabled()).toBe(true);
    const firstLabel = await panelText(page, '[data-testid="training-label"]');
    await page.getByRole('button', { name: /Toy mode/ }).click();
    // The status still says the last run's "done" until the new run has its worker: wait for its label.
    await page.waitForFunction(
      (old) => {
        const t = document.querySelector('agentflow-app')?.shadowRoot?.querySelector('agentflow-training-panel')?.shadowRoot?.querySelector('[data-testid="training-label"]')?.textContent ?? old;
        return t !== old;
      },
      firstLabel,
      { timeout: 60_000 },
    );
    await waitStatus(page, /^Done: step 1 /);
    const label = await panelText(page, '[data-testid="training-label"]');
    expect(label).toMatch(/^Toy task \(tiny planner, CPU\), from adapter “round-trip”, in a worker, run toy-/);
    const runId = /run (toy-\S+)/.exec(label)![1];
    // The run's spec (the library's record: config.spec) names the adapter it started from.
    expect(((await runRecord(page, runId))?.config.spec as { adapter?: unknown } | undefined)?.adapter).toEqual({ kind: 'stored', id: imported.id, name: 'round-trip' });
    expect(errors).toEqual([]);
    await context.close();
  });
});
