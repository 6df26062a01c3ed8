// Cache Storage for Node-side tests (Node has none): open by name, match / put / delete / keys by URL, with
// a dump of what each cache holds. The real one is covered in Chromium by the e2e tests.

/** Cache Storage semantics the source relies on: open by name, match / put / delete by URL. */
export function memoryCaches(): CacheStorage & { dump(): Record<string, string[]> } {
  const stores = new Map<string, Map<string, Response>>();
  const key = (r: RequestInfo | URL) => (typeof r === 'string' ? r : r instanceof URL ? r.href : r.url);
  const cacheOf = (m: Map<string, Response>) =>
    ({
      match: async (r: RequestInfo | URL) => m.get(key(r))?.clone(),
      put: async (r: RequestInfo | URL, res: Response) => void m.set(key(r), res.clone()),
      delete: async (r: RequestInfo | URL) => m.delete(key(r)),
      keys: async () => [...m.keys()].map((u) => new Request(u)),
    }) as unknown as Cache;
  return {
    open: async (name: string) => {
      if (!stores.has(name)) stores.set(name, new Map());
      return cacheOf(stores.get(name)!);
    },
    dump: () => Object.fromEntries([...stores].map(([n, m]) => [n, [...m.keys()].sort()])),
  } as unknown as CacheStorage & { dump(): Record<string, string[]> };
}

