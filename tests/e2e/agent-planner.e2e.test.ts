// The whole AgentFlow loop in Chromium on the real planner engine: the qwen2-tiny fixture and its LoRA
// adapter downloaded from a hub-style URL into the planner worker (WebGPU on SwiftShader), every module
// sampling from it. The model is random, so what it writes is mostly nonsense; what is checked is the
// machinery: real generation recorded for training (prompt ids, sampled ids, logprobs that the engine's
// own scoring reproduces), the parsers' fallbacks, real tool calls, every step in IndexedDB, a final
// status within the turn budget, and a page reload mid-run that loses at most the step in flight.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type ViteDevServer } from 'vite';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { serveHub, type HubServer } from '../support/hub-server';
import { maxAbsDiff } from '../support/compare';
import {
  BYTE_SPECIALS,
  FIRST_PHRASE_ID,
  LAST_PHRASE_ID,
  MAX_TURNS,
  MAX_NEW_TOKENS,
  phraseTokens,
  plannerTokenizerConfig,
  plannerTokenizerJson,
} from './pages/agent-planner-scenario';

const TINY = resolve(process.cwd(), '../shared/fixtures/qwen2-tiny');
const REPO = 'test-org/qwen2-tiny-agent';

let vite: ViteDevServer;
let hub: HubServer;
let browser: Browser;
let origin: string;
let modelDir: string;

beforeAll(async () => {
  // The hub folder: the fixture's files linked (never copied) plus the generated tokenizer files.
  modelDir = mkdtempSync(join(tmpdir(), 'agentflow-planner-e2e-'));
  for (const f of ['config.json', 'model.safetensors', 'adapter']) symlinkSync(join(TINY, f), join(modelDir, f));
  writeFileSync(join(modelDir, 'tokenizer.json'), JSON.stringify(plannerTokenizerJson()));
  writeFileSync(join(modelDir, 'tokenizer_config.json'), JSON.stringify(plannerTokenizerConfig()));
  hub = await serveHub({ [REPO]: modelDir });
  // No HMR: other work on the checkout while this runs must not make Vite reload the page mid-run.
  vite = await createServer({ configFile: 'vite.config.ts', server: { port: 0, host: '127.0.0.1', hmr: false, watch: null }, logLevel: 'error' });
  await vite.listen();
  const addr = vite.httpServer?.address();
  if (!addr || typeof addr === 'string') throw new Error('vite has no port');
  origin = `http://127.0.0.1:${addr.port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await vite?.close();
  await hub?.close();
  if (modelDir) rmSync(modelDir, { recursive: true, force: true });
});

interface StoredStep {
  seq: number;
  kind: string;
  turn: number;
  data: Record<string, unknown>;
}

interface Rollout {
  conversationId: string;
  turn: number;
  adapterId: string | null;
  engineId?: string;
  promptTokens: number[];
  tokens: number[];
  logprobs: number[];
  completion: string;
  parsedOk?: boolean;
  messages?: Array<{ role: string; content: string }>;
}

const base = () => `${hub.url}/${REPO}/resolve/main/`;

async function openPage(page: Page) {
  await page.goto(`${origin}/tests/e2e/pages/agent-planner.html`);
  return loadModel(page);
}

async function loadModel(page: Page) {
  await page.waitForFunction(() => (window as unknown as { agentReady?: boolean }).agentReady === true);
  return page.evaluate((b) => (window as any).agent.load(b), base()) as Promise<{
    id: string;
    hasTokenizer: boolean;
    adapters: string[];
    activeAdapter: string | null;
    weightsFromCache: boolean;
  }>;
}

const steps = (page: Page, id: string) => page.evaluate((cid) => (window as any).agent.steps(cid), id) as Promise<StoredStep[]>;
const rollouts = async (page: Page, id: string) =>
  ((await page.evaluate(() => (window as any).agent.rollouts())) as Rollout[]).filter((r) => r.conversationId === id).sort((a, b) => a.turn - b.turn);

/**
 * The prompt ids, built independently of the tokenizer library: ChatML with the chat tokens' ids, each
 * phrase token where its text occurs (longest first), every other character as its UTF-8 bytes.
 */
function referencePromptIds(messages: Array<{ role: string; content: string }>): number[] {
  const phrases = [...phraseTokens().keys()].map((id) => ({ id, text: (plannerTokenizerJson().added_tokens as Array<{ id: number; content: string }>).find((t) => t.id === id)!.content }));
  phrases.sort((a, b) => b.text.length - a.text.length);
  const enc = (s: string): number[] => {
    const out: number[] = [];
    let i = 0;
    let plain = '';
    const flush = () => {
      out.push(...new TextEncoder().encode(plain));
      plain = '';
    };
    while (i < s.length) {
      const p = phrases.find((x) => s.startsWith(x.text, i));
      if (p) {
        flush();
        out.push(p.id);
        i += p.text.length;
      } else plain += s[i++];
    }
    flush();
    return out;
  };
  const ids: number[] = [];
  for (const m of messages) ids.push(BYTE_SPECIALS.im_start, ...enc(`${m.role}\n${m.content}`), BYTE_SPECIALS.im_end, ...enc('\n'));
  ids.push(BYTE_SPECIALS.im_start, ...enc('assistant\n'));
  return ids;
}

const isPhrase = (id: number) => id >= FIRST_PHRASE_ID && id <= LAST_PHRASE_ID;

/** What a step says, without its timings: equal for two runs that made the same calls with the same seeds. */
function gist(s: StoredStep) {
  const d = s.data;
  return { seq: s.seq, kind: s.kind, turn: s.turn, module: d.module ?? null, text: d.raw ?? d.text ?? null, action: d.action ?? null, args: d.args ?? null, ok: d.ok ?? null, result: d.result ?? null, verdict: d.verdict ?? null, error: d.error ?? d.message ?? null };
}

/**
 * The uninterrupted run's checks: every module really generated on the fixture model with its adapter, real
 * rollouts and tool calls, each step stored. Returns its steps and rollouts, the reference a resumed run must equal.
 */
async function checkFullRun(page: Page, engineId: string): Promise<{ all: StoredStep[]; mine: Rollout[] }> {
  const id = `planner-run-${Date.now()}`;
  const result = (await page.evaluate((cid) => (window as any).agent.run(cid), id)) as { status: string; stopReason: string; turns: number; error: string | null; steps: number };
  expect(result.error).toBeNull();
  expect(result.status).toBe('done');
  expect(['verifier', 'turn-budget']).toContain(result.stopReason);
  expect(result.turns).toBeLessThanOrEqual(MAX_TURNS);

  // Every step is in IndexedDB, in order, ending with the generator's answer.
  const all = await steps(page, id);
  expect(all.length).toBe(result.steps);
  expect(all.map((s) => s.seq)).toEqual(all.map((_, i) => i));
  expect(all[0].kind).toBe('analysis');
  expect(all.at(-1)!.kind).toBe('generator');
  const conv = await page.evaluate((cid) => (window as any).agent.conversation(cid), id);
  expect(conv.status).toBe('done');
  expect(conv.answer).toBe(all.at(-1)!.data.text);
  for (const s of all.filter((x) => x.kind !== 'executor' || x.data.raw !== undefined)) {
    if (s.kind === 'error') continue;
    // Each model call really generated: ids counted, at most the token limit.
    expect(s.data.completionTokenCount as number, `${s.kind}@${s.turn}`).toBeGreaterThan(0);
    expect(s.data.completionTokenCount as number).toBeLessThanOrEqual(MAX_NEW_TOKENS);
    expect(s.data.engineId).toBe(engineId);
  }

  // The engine reuses the KV cache for the front a prompt shares with the previous call: it happened, and
  // never for more than the prompt minus its last token.
  const calls = all.filter((s) => typeof s.data.promptTokenCount === 'number');
  const cached = calls.map((s) => (s.data.timings as { cachedPromptTokens?: number }).cachedPromptTokens ?? 0);
  calls.forEach((s, i) => expect(cached[i]).toBeLessThan(s.data.promptTokenCount as number));
  expect(cached.some((c) => c > 0)).toBe(true);
  const promptTotal = calls.reduce((a, s) => a + (s.data.promptTokenCount as number), 0);
  console.info(`[agent-planner] ${calls.length} model calls, ${cached.reduce((a, c) => a + c, 0)} of ${promptTotal} prompt tokens from the KV cache`);

  // Planner calls: each one recorded as a rollout, whether or not its text parsed.
  const plannerSteps = all.filter((s) => s.kind === 'planner' || (s.kind === 'error' && s.data.module === 'planner'));
  const mine = await rollouts(page, id);
  expect(mine.map((r) => r.turn)).toEqual(plannerSteps.map((s) => s.turn));
  for (const [i, r] of mine.entries()) {
    const step = plannerSteps[i];
    expect(r.adapterId).toBe('fixture');
    expect(r.engineId).toBe(engineId);
    expect(r.tokens.length).toBeGreaterThan(0);
    expect(r.tokens.length).toBeLessThanOrEqual(MAX_NEW_TOKENS);
    expect(r.logprobs.length).toBe(r.tokens.length);
    for (const lp of r.logprobs) expect(Number.isFinite(lp) && lp <= 0, `logprob ${lp}`).toBe(true);
    expect(r.promptTokens).toEqual(referencePromptIds(r.messages!));
    expect(r.completion).toBe(step.data.raw);
    // Random bytes never spell an action: the text parses exactly when a phrase token was sampled.
    expect(r.parsedOk).toBe(r.tokens.some(isPhrase));
    expect(step.kind === 'planner').toBe(r.parsedOk);
    if (step.kind === 'error') expect(step.data).toMatchObject({ errorKind: 'unusable-output', adapterId: 'fixture' });
    else expect(step.data).toMatchObject({ parseMethod: 'json', adapterId: 'fixture' });
  }
  // What reuse gives when the planner engine serves the planner alone (in the app the other modules run on
  // web-llm): each planner prompt's common front with the previous planner prompt.
  const lcp = (a: number[], b: number[]) => { let k = 0; while (k < Math.min(a.length, b.length - 1) && a[k] === b[k]) k++; return k; };
  const shared = mine.slice(1).reduce((acc, r, i) => acc + lcp(mine[i].promptTokens, r.promptTokens), 0);
  console.info(`[agent-planner] planner prompts alone: ${shared} of ${mine.slice(1).reduce((a, r) => a + r.promptTokens.length, 0)} tokens after the first call shared with the previous planner prompt`);
  // The sampling logprobs are what the trainer uses as old logprobs: the engine's scoring of the same
  // prompt + completion must reproduce them.
  const scored = (await page.evaluate((seqs) => (window as any).agent.score(seqs), mine.map((r) => [...r.promptTokens, ...r.tokens]))) as number[][];
  mine.forEach((r, i) => expect(maxAbsDiff(r.logprobs, scored[i].slice(r.promptTokens.length - 1)), `turn ${r.turn}`).toBeLessThan(2e-3));

  // Tool calls: every executor step either ran its tool (checked against what the tool must return) or
  // recorded a tool-calling error; this seeded run ran Python in Pyodide and had fallbacks.
  const executed = all.filter((s) => s.kind === 'executor');
  for (const s of executed) {
    const args = s.data.args as Record<string, string> | null;
    if (s.data.ok !== true) expect(String(s.data.error)).toMatch(/^tool-calling error: /);
    else if (s.data.toolName === 'reverse') expect(s.data.result).toBe([...args!.text].reverse().join(''));
    else expect(s.data).toMatchObject({ toolName: 'python', args: { code: "print('hello'[::-1])" }, result: 'olleh' });
  }
  expect(executed.some((s) => s.data.toolName === 'python' && s.data.ok === true)).toBe(true);
  expect(executed.some((s) => s.data.ok === false && s.data.errorKind === 'bad-arguments')).toBe(true);
  expect(all.some((s) => s.kind === 'verifier' && s.data.parseMethod === 'default' && s.data.verdict === 'CONTINUE')).toBe(true);
  return { all, mine };
}

describe('agent on the planner engine in Chromium', () => {
  // One page for both runs: each load of the planner in SwiftShader compiles every kernel again (a third of
  // this file's time when it opened a page per run). The interrupted run comes first, so the reload is the
  // page's second load (from Cache Storage), and the uninterrupted run after it is the reference: same seeds,
  // so it must write what the resumed run wrote, whatever the KV cache held before each call.
  it('runs every module on the fixture model with its adapter; a reload mid-run keeps the stored steps and the run resumes to the end an uninterrupted run reaches', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    let navigations = 0;
    page.on('framenavigated', (f) => void (f === page.mainFrame() && navigations++));
    const first = await openPage(page);
    expect(first).toMatchObject({ id: 'planner:qwen2-tiny-agent', hasTokenizer: true, adapters: ['fixture'], activeAdapter: 'fixture', weightsFromCache: false });
    expect(hub.requests).toContain(`/${REPO}/resolve/main/adapter/adapter_model.safetensors`);

    const id = `planner-reload-${Date.now()}`;
    await page.evaluate((cid) => (window as any).agent.start(cid), id);
    // Reload once the analysis and the first planner step are stored: the run is then mid-way.
    let seen: StoredStep[] = [];
    for (const deadline = Date.now() + 300_000; seen.length < 2; ) {
      if (Date.now() > deadline) throw new Error('the run stored fewer than 2 steps in 5 minutes');
      await new Promise((r) => setTimeout(r, 20));
      seen = await steps(page, id);
    }
    hub.requests.length = 0;
    await page.reload();
    const info = await loadModel(page);
    // The second load comes from Cache Storage.
    expect(info).toMatchObject({ id: first.id, activeAdapter: 'fixture', weightsFromCache: true });
    expect(hub.requests.filter((r) => r.endsWith('.safetensors'))).toEqual([]);

    const kept = await steps(page, id);
    // Nothing that was stored is lost; at most the step in flight is.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(kept.length).toBeGreaterThanOrEqual(seen.length);
    expect((await page.evaluate((cid) => (window as any).agent.conversation(cid), id)).status).toBe('running');
    expect(await page.evaluate(() => (window as any).agent.markStale())).toEqual([id]);
    expect((await page.evaluate((cid) => (window as any).agent.conversation(cid), id)).status).toBe('interrupted');
    expect(navigations).toBe(2); // the first load and the test's reload, nothing else
    const resumed = (await page.evaluate((cid) => (window as any).agent.resume(cid), id)) as { status: string; error: string | null };
    expect(resumed).toMatchObject({ status: 'done', error: null });
    expect((await page.evaluate((cid) => (window as any).agent.conversation(cid), id)).status).toBe('done');

    const reference = await checkFullRun(page, info.id);
    // The reload really cut the run short, and what it kept is the front of the uninterrupted run.
    expect(kept.length).toBeLessThan(reference.all.length);
    expect(kept.map(gist)).toEqual(reference.all.slice(0, kept.length).map(gist));
    // Same seeds, same stored state: the resumed run wrote exactly what the uninterrupted one wrote.
    expect((await steps(page, id)).map(gist)).toEqual(reference.all.map(gist));
    const mine = await rollouts(page, id);
    expect(mine.map((r) => [r.turn, r.tokens, r.promptTokens.length])).toEqual(reference.mine.map((r) => [r.turn, r.tokens, r.promptTokens.length]));
    mine.forEach((r, i) => expect(maxAbsDiff(r.logprobs, reference.mine[i].logprobs)).toBeLessThan(2e-3));
    expect(navigations).toBe(2);
    expect(errors).toEqual([]);
    await page.close();
  });
});
