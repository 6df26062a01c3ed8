// Workers are thin hosts of src/ code: their protocols live in src/, so nothing under src/ imports a worker
// module (a worker's URL, new URL('…/workers/x.ts', import.meta.url), is how src/ starts one, not an import).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : /\.(ts|mts|js|mjs)$/.test(e.name) ? [join(dir, e.name)] : []));
}

describe('layering', () => {
  it('no file under src/ imports from workers/', () => {
    const offenders = sources(join(ROOT, 'src')).filter((f) => /\b(?:from|import)\s*\(?\s*['"][./]*\/workers\//.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});
