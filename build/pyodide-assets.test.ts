import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PYODIDE_FILES, pyodideAssets, pyodidePackageDir } from './pyodide-assets';

describe('pyodideAssets vite plugin', () => {
  it('emits each Pyodide runtime file, byte for byte, under pyodide/ in the build only', () => {
    const plugin = pyodideAssets();
    expect(plugin.apply).toBe('build');
    const emitted: Array<{ fileName: string; source: Uint8Array }> = [];
    const ctx = { emitFile: (f: { fileName: string; source: Uint8Array }) => (emitted.push(f), 'id'), error: (m: string) => { throw new Error(m); } };
    (plugin.generateBundle as unknown as (this: typeof ctx) => void).call(ctx);
    expect(emitted.map((e) => e.fileName)).toEqual(PYODIDE_FILES.map((f) => `pyodide/${f}`));
    const dir = pyodidePackageDir();
    for (const e of emitted) {
      const want = readFileSync(join(dir, e.fileName.slice('pyodide/'.length)));
      expect(Buffer.compare(Buffer.from(e.source), want)).toBe(0);
    }
  });
});
