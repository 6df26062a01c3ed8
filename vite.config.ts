import { defineConfig } from 'vite';

// The app is a static site: relative base so dist/ works from any host and sub-path.
export default defineConfig({
  base: './',
  worker: { format: 'es' },
  build: {
    target: 'es2022',
    outDir: 'dist',
    sourcemap: true,
    chunkSizeWarningLimit: 8000,
  },
  optimizeDeps: { exclude: ['webgpu'] },
  server: { fs: { allow: ['.', '../shared'] } },
});
