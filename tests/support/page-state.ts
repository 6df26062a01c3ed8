// When an e2e wait times out on the CI machine, its log is all the next person has: "waiting for X" does not
// say whether the page was slow, somewhere else, or showing an error. This adds what the page showed.
import type { Page } from 'playwright-core';

/** Label -> CSS selector (Playwright's CSS pierces open shadow roots). */
export type StateProbes = Record<string, string>;

const MAX_CHARS = 2_000;

/** What each probe's elements show (text, or a form field's value), a line each; never throws. */
export async function describePage(page: Page, probes: StateProbes): Promise<string> {
  const lines: string[] = [];
  for (const [label, selector] of Object.entries(probes)) {
    try {
      const found = page.locator(selector);
      const n = await found.count();
      const texts: string[] = [];
      for (let i = 0; i < Math.min(n, 3); i++) {
        const el = found.nth(i);
        const value = await el.evaluate((node) => ('value' in node && typeof node.value === 'string' ? node.value : (node.textContent ?? '')), undefined, { timeout: 1_000 });
        const flat = value.replace(/\s+/g, ' ').trim();
        texts.push(JSON.stringify(flat.length > MAX_CHARS ? `${flat.slice(0, MAX_CHARS)}…` : flat));
      }
      lines.push(`  ${label} (${n}): ${texts.join(' | ') || '-'}`);
    } catch (e) {
      lines.push(`  ${label}: could not be read (${(e as Error).message.split('\n')[0]})`);
    }
  }
  return lines.join('\n');
}

/** Runs `step`; if it throws, rethrows with the page's state (per `probes`) appended to the message. */
export async function explainFailure<T>(page: Page, probes: StateProbes, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    const state = await describePage(page, probes);
    const err = e instanceof Error ? e : new Error(String(e));
    err.message = `${err.message}\nWhat the page showed then:\n${state}`;
    throw err;
  }
}
