// The layout rules of #19 that a reader relies on, checked on the source: no import circles in src/ (type
// imports included: a circle of types is still a circle to read), nothing in src/ (tests included) importing
// from workers/ (workers are thin hosts; their protocols live in src/; a worker's URL,
// new URL('…/workers/x.ts', import.meta.url), is how src/ starts one, not an import), engine modules short.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

/** Files under `dir` whose names pass `keep` (default: modules, not tests or declarations). */
function sources(dir: string, keep = (name: string) => name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p, keep));
    else if (keep(e.name)) out.push(p);
  }
  return out;
}

/** Relative imports of `file` (static, re-exports and dynamic), as paths from the project root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+['"](\.[^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  const out: string[] = [];
  for (const spec of specs) {
    const base = resolve(dirname(file), spec);
    const hit = [`${base}.ts`, join(base, 'index.ts'), base].find((c) => c.endsWith('.ts') && existsSync(c));
    if (hit) out.push(relative(ROOT, hit));
  }
  return out;
}

/** Strongly connected components with more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) found.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('source layout', () => {
  const files = sources(join(ROOT, 'src'));
  const graph = new Map(files.map((f) => [relative(ROOT, f), importsOf(f)]));

  it('finds the imports it checks', () => {
    // Guards the checker itself: the runtime's resources import the KV cache, and the loop its parser.
    expect(graph.get('src/engine/runtime-resources.ts')).toContain('src/model/kv-cache.ts');
    expect(graph.get('src/agent/loop.ts')).toContain('src/agent/parse.ts');
  });

  it('has no import circles in src/', () => {
    expect(circles(graph)).toEqual([]);
    // And the checker sees a circle when there is one.
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
  });

  it('keeps every engine module under 450 lines, so each has one job a reader can hold', () => {
    const long = files
      .filter((f) => relative(ROOT, f).startsWith('src/engine/'))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([, n]) => n > 450);
    expect(long).toEqual([]);
  });

  it('has no file under src/ importing from workers/', () => {
    const all = sources(join(ROOT, 'src'), (name) => /\.(ts|mts|js|mjs)$/.test(name));
    const offenders = all.filter((f) => /\b(?:from|import)\s*\(?\s*['"][./]*\/workers\//.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});
