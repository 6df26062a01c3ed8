import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { pyodideAssets, PYODIDE_FILES } from './build/pyodide-assets.ts';

/**
 * The built site as an offline app: a Workbox service worker precaches the app shell, its chunks and workers,
 * and Pyodide's runtime, so after one visit the page, the demo and Python run with no network. Models are not
 * precached: the planner and web-llm keep their weights in their own caches (Cache Storage, IndexedDB), and a
 * precache of gigabytes would download on the first visit without being asked. `prompt`: a new version waits
 * until every tab of the old one is closed rather than reloading a page that may be training. Development
 * (`npm start`) registers no worker (devOptions off), so the dev server's modules are never served stale.
 */
export const offlineApp = VitePWA({
  registerType: 'prompt',
  // A registerSW.js file, not an inline script: the page's CSP allows scripts from 'self' only.
  injectRegister: 'script',
  // public/manifest.webmanifest is the app's manifest, linked from index.html.
  manifest: false,
  devOptions: { enabled: false },
  workbox: {
    globPatterns: ['**/*.{html,js,mjs,css,svg,webmanifest,wasm}', ...PYODIDE_FILES.map((f) => `pyodide/${f}`)],
    globIgnores: ['**/*.map'],
    // Pyodide's wasm is ~10 MB and the web-llm chunk several: the 2 MiB default would leave them out.
    maximumFileSizeToCacheInBytes: 64 * 2 ** 20,
    // A navigation to any path of the app offline gets the shell, but not one to a file (a model's config.json
    // opened in a tab): that is left to the network, so a file is never answered with the app.
    navigateFallback: 'index.html',
    navigateFallbackDenylist: [/\/[^/?#]+\.[^/?#]+$/],
    cleanupOutdatedCaches: true,
  },
});

// The app is a static site: relative base so dist/ works from any host and sub-path.
export default defineConfig({
  base: './',
  // Ships Pyodide's runtime files with the build so the Python tool works offline from any static host.
  plugins: [pyodideAssets(), offlineApp],
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
