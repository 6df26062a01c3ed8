import { defineConfig, mergeConfig } from 'vite';
import appConfig, { offlineApp } from './vite.config.ts';

// The embeddable element as an ES library: dist-lib/agentflow-chat.js, its chunks and workers in
// dist-lib/assets/, Pyodide's files in dist-lib/pyodide/. Every asset is found from the importing module's
// own URL (import.meta.url), so the folder works copied to any origin and sub-path. The tools get a chunk of
// their own under assets/ because the Python tool finds Pyodide at '../pyodide/' from its chunk, as in the
// app's build. Everything else (base, workers, Pyodide plugin, target) is the app's config, less the offline
// app's service worker: a page embedding the element owns its own.
export default mergeConfig(
  { ...appConfig, plugins: appConfig.plugins?.filter((p) => p !== offlineApp) },
  defineConfig({
    build: {
      outDir: 'dist-lib',
      emptyOutDir: true,
      copyPublicDir: false,
      lib: {
        entry: 'src/element.ts',
        formats: ['es'],
        fileName: () => 'agentflow-chat.js',
      },
      rolldownOptions: {
        output: {
          chunkFileNames: 'assets/[name]-[hash].js',
          codeSplitting: { groups: [{ name: 'tools', test: /src[\\/]tools[\\/]/ }] },
        },
      },
    },
  }),
);
