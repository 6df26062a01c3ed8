// Waiting for the state an e2e test asserts, not for a container to appear: a list, a table or a status
// line can exist before its rows or final text have rendered, so reading it once right after waitFor() is a
// race that a loaded 2-core CI machine loses now and then. These poll the value until it matches.
import { expect } from 'vitest';
import type { Locator } from 'playwright-core';

/** expect.poll with a timeout fit for e2e tests on a slow machine (vitest's default is one second). */
export function poll<T>(read: () => Promise<T> | T, timeout = 30_000) {
  return expect.poll(read, { timeout, interval: 50 });
}

export const textOf = (l: Locator) => async (): Promise<string> => (await l.textContent()) ?? '';
export const textsOf = (l: Locator) => (): Promise<string[]> => l.allTextContents();
export const countOf = (l: Locator) => (): Promise<number> => l.count();
