// A page reload in the middle of an agent run loses at most the step in flight: after the reload the run
// shows as interrupted with its stored steps, and resuming it finishes from the stored memory.
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { devServerAndChromium } from '../support/dev-browser';

const dev = devServerAndChromium();

interface StoredStep {
  seq: number;
  kind: string;
  turn: number;
  data: Record<string, unknown>;
}

async function ready(page: Page) {
  await page.waitForFunction(() => (window as unknown as { agentReady?: boolean }).agentReady === true);
}

const steps = (page: Page, id: string) => page.evaluate((cid) => (window as any).agent.steps(cid), id) as Promise<StoredStep[]>;

describe('agent run across a page reload', () => {
  it('keeps the completed steps, shows the run as interrupted, and resumes it to the right answer', async () => {
    const page = await dev.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${dev.base}/tests/e2e/pages/agent.html`);
    await ready(page);
    const id = `run-${Date.now()}`;
    await page.evaluate((cid) => (window as any).agent.start(cid), id);
    // Wait until the second turn's planner step is stored; its executor call is now stalled.
    // Polled from Node: page.waitForFunction takes an async predicate's Promise as truthy and returns at once.
    await expect.poll(async () => (await steps(page, id)).length, { interval: 50, timeout: 60_000 }).toBeGreaterThanOrEqual(5);
    await page.reload();
    await ready(page);

    const kept = await steps(page, id);
    expect(kept.map((s) => `${s.kind}@${s.turn}`)).toEqual(['analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2']);
    expect(kept[2].data).toMatchObject({ ok: true, result: '42', args: { a: 6, b: 7 } });
    const before = await page.evaluate((cid) => (window as any).agent.conversation(cid), id);
    expect(before.status).toBe('running'); // the page died without saying so
    expect(await page.evaluate(() => (window as any).agent.markStale())).toEqual([id]);
    expect((await page.evaluate((cid) => (window as any).agent.conversation(cid), id)).status).toBe('interrupted');

    const result = await page.evaluate((cid) => (window as any).agent.resume(cid), id);
    expect(result).toEqual({ status: 'done', finalAnswer: '420', reward: 1, turns: 2 });
    const all = await steps(page, id);
    expect(all.map((s) => `${s.kind}@${s.turn}`)).toEqual([
      'analysis@0', 'planner@1', 'executor@1', 'verifier@1', 'planner@2', 'executor@2', 'verifier@2', 'generator@2',
    ]);
    expect(all.map((s) => s.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const conv = await page.evaluate((cid) => (window as any).agent.conversation(cid), id);
    expect(conv).toMatchObject({ status: 'done', reward: 1 });
    const rollouts = (await page.evaluate(() => (window as any).agent.rollouts())) as Array<{ conversationId: string; turn: number; reward: number; tokens: number[]; logprobs: number[] }>;
    const mine = rollouts.filter((r) => r.conversationId === id);
    expect(mine.map((r) => [r.turn, r.reward])).toEqual([[1, 1], [2, 1]]);
    for (const r of mine) expect(r.tokens.length).toBe(r.logprobs.length);
    expect(errors).toEqual([]);
    await page.close();
  });
});
