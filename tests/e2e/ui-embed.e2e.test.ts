// The library build of <agentflow-chat>, served from a sub-path with examples/embed.html beside it: the
// element works in a plain page with one module script and scripted engines, fires its events, keeps the
// conversation across a reload, never executes or inserts HTML that a model wrote, and runs Python from the
// pyodide/ folder the library ships.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveStatic, type StaticServer } from '../support/static-server';
import { poll, textOf, textsOf } from '../support/poll';
import { buildApp } from '../support/build-app';

let server: StaticServer;
let browser: Browser;
const outDir = mkdtempSync(join(tmpdir(), 'agentflow-lib-'));
const shots = mkdtempSync(join(tmpdir(), 'agentflow-embed-shots-'));
const SUB = '/deep/sub/path/';

beforeAll(async () => {
  await buildApp(outDir, 'vite.lib.config.ts');
  copyFileSync('examples/embed.html', join(outDir, 'embed.html'));
  server = await serveStatic({ [SUB]: outDir });
  browser = await launchChromium();
  console.info(`[ui-embed] screenshots in ${shots}`);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** A fresh browser context (with `options`) on the example page, once the element is ready; `errors` collects uncaught page errors. */
async function openEmbed(options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}${SUB}embed.html`);
  await page.waitForFunction(() => (window as unknown as { embedReady?: boolean }).embedReady === true);
  return { context, page, errors };
}

const LONG = 'Supercalifragilistic'.repeat(4);

/** Elements of the page and the chat (inside its shadow root) that reach past the chat's border or the screen. */
function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const host = document.querySelector('agentflow-chat')!;
    const right = Math.min(host.getBoundingClientRect().right, window.innerWidth);
    const out: string[] = [];
    if (document.documentElement.scrollWidth > window.innerWidth) out.push(`page scrolls: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
    // Inside an element that scrolls or clips its overflow (a wide table), contents stay within the border.
    const clipped = (el: Element): boolean => {
      for (let a = el.parentElement; a; a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return a.getBoundingClientRect().right <= right + 0.5;
      return false;
    };
    const walk = (root: ParentNode) => {
      for (const el of root.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}.${el.className}`;
        if (r.width && r.right > right + 0.5 && !clipped(el)) out.push(`${name} right ${Math.round(r.right)} > ${Math.round(right)}`);
        // Text wider than its box (a long word that does not wrap) spills out without widening the box.
        else if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && getComputedStyle(el).overflowX === 'visible') out.push(`${name} content ${el.scrollWidth} > ${el.clientWidth}`);
        if (el.shadowRoot) walk(el.shadowRoot);
      }
    };
    walk(document.body);
    return out.slice(0, 10);
  });
}

async function ask(page: Page, text: string): Promise<void> {
  const input = page.getByRole('textbox', { name: 'Your question' });
  await input.fill(text);
  await input.press('Enter');
}

describe('<agentflow-chat> embedded in a plain page', () => {
  it('answers with the page tool, fires its events, shows the trajectory and keeps the conversation across a reload', async () => {
    const { context, page, errors } = await openEmbed({ acceptDownloads: true });
    await page.evaluate(() => {
      const w = window as unknown as { events: Array<{ type: string; detail: Record<string, unknown> }> };
      w.events = [];
      const chat = document.querySelector('agentflow-chat')!;
      for (const type of ['agentflow-turn', 'agentflow-answer']) chat.addEventListener(type, (e) => w.events.push({ type, detail: (e as CustomEvent).detail }));
    });
    await ask(page, 'How many letters in abc 12?');
    const answer = page.locator('agentflow-chat [data-testid="answer"] .text');
    // The page tool counted "How many letters in abc 12?": 19 letters, 2 digits, 5 spaces.
    await poll(textOf(answer)).toContain('19 letters, 2 digits, 5 spaces');

    const readEvents = () => page.evaluate(() => (window as unknown as { events: Array<{ type: string; detail: Record<string, unknown> }> }).events);
    // The answer is on screen once the generator's step renders; the answer event follows when the run has
    // been stored, which under load can be a moment later.
    await expect.poll(async () => (await readEvents()).filter((e) => e.type === 'agentflow-answer').length, { timeout: 30_000 }).toBe(1);
    const events = await readEvents();
    const turns = events.filter((e) => e.type === 'agentflow-turn').map((e) => e.detail.kind);
    expect(turns).toEqual(['analysis', 'planner', 'executor', 'verifier', 'generator']);
    const ans = events.filter((e) => e.type === 'agentflow-answer');
    expect(ans).toHaveLength(1);
    expect(ans[0].detail).toMatchObject({ status: 'done', stopReason: 'verifier', query: 'How many letters in abc 12?' });
    expect(String(ans[0].detail.finalAnswer)).toContain('19 letters');

    // Expand the trajectory from the keyboard.
    const toggle = page.getByRole('button', { name: /Show trajectory \(1 turn\)/ });
    await toggle.focus();
    await page.keyboard.press('Enter');
    const traj = page.locator('agentflow-chat .trajectory');
    await poll(textOf(traj)).toContain('letter_count');
    const trajText = (await traj.textContent()) ?? '';
    expect(trajText).toContain('"text": "How many letters in abc 12?"');
    expect(trajText).toContain('STOP');
    expect(await page.getByRole('button', { name: /Hide trajectory/ }).getAttribute('aria-expanded')).toBe('true');
    await page.screenshot({ path: join(shots, 'embed-answer.png'), fullPage: true });

    // Export as JSON: the download holds the conversation and its five steps.
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /Export conversation “How many letters/ }).click()]);
    const exported = JSON.parse(readFileSync((await download.path())!, 'utf8'));
    expect(exported.format).toBe('agentflow-conversation');
    expect(exported.conversation.query).toBe('How many letters in abc 12?');
    expect(exported.steps.map((s: { kind: string }) => s.kind)).toEqual(['analysis', 'planner', 'executor', 'verifier', 'generator']);

    // Every request stayed under the sub-path the library was copied to.
    expect(server.requests.filter((r) => !r.startsWith(SUB))).toEqual([]);

    await page.reload();
    await page.waitForFunction(() => (window as unknown as { embedReady?: boolean }).embedReady === true);
    const listed = page.locator('agentflow-chat [data-testid="conversation-list"] button.open');
    await poll(textsOf(listed)).toEqual([expect.stringContaining('How many letters in abc 12?')]);
    await listed.first().click();
    await poll(textOf(answer)).toContain('19 letters, 2 digits, 5 spaces');
    expect(errors).toEqual([]);
    await context.close();
  });

  it('renders HTML in model output inertly: no script runs, no element or handler is inserted; at 390 px nothing overflows', async () => {
    // A phone's width: the answer's long word, code and table must wrap or scroll inside the element's border.
    const { context, page, errors } = await openEmbed({ viewport: { width: 390, height: 800 } });
    // A string, so the test runner does not rewrite the page's dynamic import.
    await page.evaluate(`(async () => {
      const lib = await import('${SUB}agentflow-chat.js');
      const hostile = '**Bold** <img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</scr' + 'ipt> [link](javascript:window.__pwned=3) <a href="https://example.org" onclick="window.__pwned=4">bad</a> <a href="https://example.org">ok</a>' +
        ' ${LONG} \`${LONG}\`\\n\\n\`\`\`\\n${LONG} ${LONG}\\n\`\`\`\\n\\n| a | b |\\n| - | - |\\n| ${LONG} | ${LONG} |\\n';
      const script = lib.demoScript();
      document.querySelector('agentflow-chat').engines = {
        planner: new lib.ScriptedEngine({ planner: script.planner }, 'planner:hostile'),
        shared: new lib.ScriptedEngine({ ...script, planner: undefined, generator: [hostile] }, 'shared:hostile'),
      };
    })()`);
    await ask(page, 'Say something dangerous');
    const text = page.locator('agentflow-chat [data-testid="answer"] .text.md');
    await poll(() => text.evaluate((el) => el.innerHTML)).toContain('<strong>Bold</strong>');
    const inner = await text.evaluate((el) => el.innerHTML);
    expect(inner).not.toMatch(/<img|<script|javascript:/i);
    // No element got a handler: markup with one shows as the text the model wrote.
    expect(await text.evaluate((el) => [...el.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name)).filter((a) => a.startsWith('on')))).toEqual([]);
    expect(await text.textContent()).toContain('<a href="https://example.org" onclick="window.__pwned=4">bad');
    // The plain link survives as a link.
    const safe = text.getByRole('link', { name: 'ok' });
    expect(await safe.getAttribute('href')).toBe('https://example.org');
    await safe.evaluate((a) => a.addEventListener('click', (e) => e.preventDefault()));
    await safe.click();
    // The javascript: link lost its href; clicking its text does nothing.
    expect(await text.getByText('link', { exact: true }).getAttribute('href')).toBeNull();
    await text.getByText('link', { exact: true }).click();
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.getByRole('button', { name: /Show trajectory/ }).click();
    await poll(textOf(page.locator('agentflow-chat .trajectory'))).toContain('Say something dangerous');
    await text.locator('table').waitFor();
    expect(await overflowing(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.screenshot({ path: join(shots, 'embed-hostile-390.png'), fullPage: true });
    await context.close();
  });

  it('stops a run with the Stop button and resumes it from its stored steps', async () => {
    const { context, page, errors } = await openEmbed();
    // The generator stalls for a minute: only Stop can end this run soon.
    await page.evaluate(`(async () => {
      const lib = await import('${SUB}agentflow-chat.js');
      const script = lib.demoScript();
      const chat = document.querySelector('agentflow-chat');
      chat.engines = {
        planner: new lib.ScriptedEngine({ planner: script.planner }, 'planner:slow'),
        shared: new lib.ScriptedEngine({ ...script, planner: undefined, generator: [{ text: 'late', delayMs: 60000 }] }, 'shared:slow'),
      };
      window.slowDone = false;
      chat.addEventListener('agentflow-answer', (e) => (window.slowAnswer = e.detail));
    })()`);
    await ask(page, 'Count me');
    await page.locator('agentflow-chat [data-testid="live"]').getByText('Answering').waitFor({ timeout: 30_000 });
    const stop = page.getByRole('button', { name: 'Stop' });
    await stop.focus();
    await page.keyboard.press('Enter');
    await poll(() => page.evaluate(() => (window as unknown as { slowAnswer?: Record<string, unknown> }).slowAnswer ?? null), 10_000).toMatchObject({ status: 'interrupted', stopReason: 'aborted', answer: null });
    // The list is re-read from IndexedDB after the run settles, so it may show 'running' for a moment.
    await expect.poll(async () => page.locator('agentflow-chat [data-testid="conversation-list"] li').first().textContent(), { timeout: 10_000 }).toContain('interrupted');
    // Resume with an engine that answers: the stored turn is kept, only the generator runs again.
    await page.evaluate(`(async () => {
      const lib = await import('${SUB}agentflow-chat.js');
      const script = lib.demoScript();
      const chat = document.querySelector('agentflow-chat');
      chat.engines = {
        planner: new lib.ScriptedEngine({}, 'planner:unused'),
        shared: new lib.ScriptedEngine({ generator: script.generator }, 'shared:resume'),
      };
    })()`);
    await page.getByRole('button', { name: 'Resume' }).click();
    // Other engines than the run started on: the element asks before mixing them into one run.
    const confirm = page.locator('agentflow-chat [data-testid="resume-confirm"]');
    await poll(textOf(confirm), 10_000).toContain('This run started on the scripted demo (planner:slow + shared:slow); the engines now are the scripted demo (planner:unused + shared:resume)');
    await page.getByRole('button', { name: 'Resume on the current engines' }).click();
    const answer = page.locator('agentflow-chat [data-testid="answer"] .text');
    await poll(async () => (await textOf(answer)()).trim()).toBe('7 letters, 0 digits, 1 spaces');
    expect(errors).toEqual([]);
    await context.close();
  });

  it("runs Python from the library's own pyodide/ folder, wherever the folder was copied", async () => {
    const { context, page, errors } = await openEmbed();
    const before = server.requests.length;
    // The built-in Python tool instead of the page's: the demo hands it the arithmetic in the question.
    await page.evaluate(() => document.querySelector('agentflow-chat')!.setAttribute('tools', 'python'));
    await ask(page, 'What is 6*7?');
    const answer = page.locator('agentflow-chat [data-testid="answer"] .text');
    await poll(async () => (await textOf(answer)()).trim(), 60_000).toBe('42');
    const asked = server.requests.slice(before);
    expect(asked.filter((r) => r.startsWith(`${SUB}pyodide/`)).map((r) => r.slice(SUB.length)).sort()).toEqual(expect.arrayContaining(['pyodide/pyodide.asm.wasm', 'pyodide/pyodide.mjs', 'pyodide/python_stdlib.zip']));
    expect(asked.filter((r) => !r.startsWith(SUB))).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });
});
