// Vite plugin (Node side, used only by vite.config.ts): copies Pyodide's runtime files into the production
// build at `pyodide/`, beside index.html, under their own names. Pyodide finds its siblings by name from
// one folder URL, so Vite's hashed `?url` assets cannot be used. In development no copy is needed: Vite
// serves node_modules/pyodide/ directly (see defaultPyodideIndexURL in python.ts).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Plugin } from 'vite';

/** Everything loadPyodide fetches when no extra packages are loaded. */
export const PYODIDE_FILES = ['pyodide.mjs', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json'] as const;

/** The folder holding the installed pyodide package's files. */
export function pyodidePackageDir(): string {
  return dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));
}

export function pyodideAssets(options: { outDir?: string } = {}): Plugin {
  const outDir = options.outDir ?? 'pyodide';
  return {
    name: 'agentflow:pyodide-assets',
    apply: 'build',
    generateBundle() {
      const dir = pyodidePackageDir();
      for (const name of PYODIDE_FILES) {
        let source: Buffer;
        try {
          source = readFileSync(join(dir, name));
        } catch (e) {
          this.error(`pyodide-assets: cannot read ${join(dir, name)} (${String(e)}); run npm install`);
        }
        this.emitFile({ type: 'asset', fileName: `${outDir}/${name}`, source });
      }
    },
  };
}
