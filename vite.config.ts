import { defineConfig } from 'vite';
import { pyodideAssets } from './src/tools/pyodide-assets.ts';

// The app is a static site: relative base so dist/ works from any host and sub-path.
export default defineConfig({
  base: './',
  // Ships Pyodide's runtime files with the build so the Python tool works offline from any static host.
  plugins: [pyodideAssets()],
  worker: { format: 'es' },
  build: {
    target: 'es2022',
    outDir: 'dist',
    sourcemap: true,
    chunkSizeWarningLimit: 8000,
  },
  optimizeDeps: {
    exclude: ['webgpu'],
    // Pre-bundled up front: discovering them mid-run makes Vite reload the page under a browser test.
    include: ['lit', 'lit/directives/unsafe-html.js', 'comlink', 'idb', 'dompurify', 'marked', '@huggingface/jinja', '@lenml/tokenizers', 'uplot'],
  },
  server: { fs: { allow: ['.', '../shared'] } },
});
