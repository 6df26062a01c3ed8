// The split of issue 29 item 3, checked on the source: ui/ holds views (lit components and their render
// helpers), each short enough to read whole; what they use to load, run, store and train lives in
// controllers/, which never reaches back into a view; workers live in workers/, started by URL.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');
const UI_MAX_LINES = 400;

/** Modules under `dir` (tests and declarations left out). */
function modules(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...modules(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Files (as paths from the root) over `max` lines. */
function tooLong(files: Array<{ path: string; text: string }>, max: number): string[] {
  return files.filter((f) => f.text.split('\n').length > max).map((f) => f.path);
}

/** Relative imports (static, type, re-export, dynamic) of a module at `path`, resolved to paths from the root. */
function relativeImports(path: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+['"](\.[^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  return specs.map((s) => relative(ROOT, resolve(ROOT, dirname(path), s)));
}

/** Value (not `import type`) imports of a module at `path`, resolved to paths from the root. */
function valueImports(path: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:import|export)\s+(?!type\s)[^'";]*?from\s+['"](\.[^'"]+)['"]/g), ...text.matchAll(/import\s+['"](\.[^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  return specs.map((s) => relative(ROOT, resolve(ROOT, dirname(path), s)));
}

/** A module that reads or writes IndexedDB: the store room, and the trainer's stores over it (`*-idb`). */
const isStore = (p: string) => p.startsWith('src/store/') || /-idb$/.test(p);

/** Modules that use a store's functions, not only its types. */
function usingStores(files: Array<{ path: string; text: string }>): string[] {
  return files.filter((f) => valueImports(f.path, f.text).some(isStore)).map((f) => f.path);
}

/** Modules under `from` that import anything under `into`. */
function reachingInto(files: Array<{ path: string; text: string }>, into: string): string[] {
  return files.filter((f) => relativeImports(f.path, f.text).some((p) => p === into || p.startsWith(`${into}/`))).map((f) => f.path);
}

const read = (dir: string) => modules(join(ROOT, dir)).map((p) => ({ path: relative(ROOT, p), text: readFileSync(p, 'utf8') }));

describe('ui/ and controllers/', () => {
  it('keeps every ui/ module under 400 lines', () => {
    expect(tooLong(read('src/ui'), UI_MAX_LINES)).toEqual([]);
    // The checker sees a long file.
    expect(tooLong([{ path: 'a.ts', text: 'x\n'.repeat(UI_MAX_LINES) }, { path: 'b.ts', text: 'x' }], UI_MAX_LINES)).toEqual(['a.ts']);
  });

  it('has no controller importing a view', () => {
    const controllers = read('src/controllers');
    expect(controllers.length).toBeGreaterThan(10);
    expect(reachingInto(controllers, 'src/ui')).toEqual([]);
    // The checker sees an import into ui/, a type import and a dynamic one included.
    const fake = [
      { path: 'src/controllers/x/a.ts', text: "import type { V } from '../../ui/view';" },
      { path: 'src/controllers/x/b.ts', text: "const m = await import('../../ui/view');" },
      { path: 'src/controllers/x/c.ts', text: "import { y } from '../y';" },
    ];
    expect(reachingInto(fake, 'src/ui')).toEqual(['src/controllers/x/a.ts', 'src/controllers/x/b.ts']);
  });

  it('has no view reading or writing storage itself: a view asks a controller, which owns the data', () => {
    expect(usingStores(read('src/ui'))).toEqual([]);
    // The checker sees a store's function imported and lets its record types through.
    const fake = [
      { path: 'src/ui/a.ts', text: "import { keepAdapter } from '../store/training-storage';" },
      { path: 'src/ui/b.ts', text: "import { listRuns } from '../trainer/run/run-store-idb';" },
      { path: 'src/ui/c.ts', text: "import type { AdapterRecord } from '../store/records';" },
      { path: 'src/ui/d.ts', text: "import { adapterZip } from '../controllers/training/adapter-export';" },
    ];
    expect(usingStores(fake)).toEqual(['src/ui/a.ts', 'src/ui/b.ts']);
  });

  it('keeps every worker module in workers/', () => {
    const stray = modules(join(ROOT, 'src')).filter((p) => /\.worker\.ts$/.test(p));
    expect(stray.map((p) => relative(ROOT, p))).toEqual([]);
  });
});
