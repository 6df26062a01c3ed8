import { availableParallelism } from 'node:os';
import { defineConfig, mergeConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import viteConfig from './vite.config.ts';

import { CHROMIUM_ARGS, CHROMIUM_PATH as CHROMIUM } from './tests/support/chromium.ts';
import { LongFirstSequencer } from './tests/support/long-first-sequencer.ts';

// A fresh object per project: Vitest writes each project's name into its instances.
const chromiumBrowser = () => ({
  enabled: true,
  headless: true,
  screenshotFailures: false,
  provider: playwright({ launchOptions: { executablePath: CHROMIUM, args: CHROMIUM_ARGS } }),
  instances: [{ browser: 'chromium' as const }],
});
export default mergeConfig(
  viteConfig,
  defineConfig({
    test: {
      sequence: { sequencer: LongFirstSequencer },
      projects: [
        {
          extends: true,
          test: {
            name: 'unit',
            // Groups run one after another: unit; gpu beside browser-gpu; browser; e2e. The unit project's two
            // workers already fill 2 cores; Dawn (lavapipe) and Chromium (SwiftShader) each keep ~1.65 of 2 cores
            // busy, so side by side they fill the gaps: 951 s for gpu and every Chromium test against 352 + 746 s
            // one after the other (2026-11-28, this 2-core machine, idle); with browser-gpu's shared page, 607 s
            // for gpu + browser-gpu, then 183 s for browser. The UI tests and e2e run alone (their waits have
            // timeouts; not measured beside the others).
            sequence: { groupOrder: 0 },
            // Vitest's default is one worker fewer than the cores: on CI's 2 cores the unit files ran one at a
            // time, using 1.2 cores (2026-11-28, clean clone: 417 s). At least two workers, the long files first
            // (LongFirstSequencer), overlap the long files with everything else (177 s there).
            maxWorkers: Math.max(2, availableParallelism() - 1),
            environment: 'node',
            // Vitest's 5 s default turns CPU-bound tests into timed tests on a loaded 2-core machine (a 63k-value
            // sweep took 5.4 s there); a hang still fails, after a minute.
            testTimeout: 60_000,
            include: ['src/**/*.test.ts', 'bench/**/*.test.ts', 'build/**/*.test.ts', 'tests/unit/**/*.test.ts'],
            exclude: ['**/*.gpu.test.ts', '**/*.browser.test.ts', '**/*.e2e.test.ts', 'node_modules/**'],
          },
        },
        {
          extends: true,
          test: {
            name: 'gpu',
            sequence: { groupOrder: 1 },
            environment: 'node',
            include: ['src/**/*.gpu.test.ts', 'bench/**/*.node.gpu.test.ts', 'tests/gpu/**/*.test.ts'],
            testTimeout: 600_000,
            hookTimeout: 600_000,
            // Software GPUs use every core; two Dawn devices at once only slow each other down.
            fileParallelism: false,
          },
        },
        {
          extends: true,
          test: {
            name: 'browser-gpu',
            // The GPU tests again in Chromium (the f32 fallback WGSL on SwiftShader), beside the gpu project (see
            // unit); both run one file at a time, as a group's projects must agree.
            sequence: { groupOrder: 1 },
            include: ['src/**/*.gpu.test.ts'],
            exclude: ['**/*.node.gpu.test.ts', 'node_modules/**'],
            testTimeout: 600_000,
            hookTimeout: 600_000,
            fileParallelism: false,
            // One page for every file: tests/support/gpu.ts's devices, and the pipelines compiled on them, serve
            // the next file, where an isolated page compiled the planner's kernels again in each (SwiftShader
            // compiles many times slower than lavapipe). 2026-11-28, idle: every Chromium test in one page took
            // 590 s instead of 746 s, but a UI test failed there (they share a document), so the UI tests keep
            // their own pages (next project).
            isolate: false,
            browser: chromiumBrowser(),
          },
        },
        {
          extends: true,
          test: {
            name: 'browser',
            sequence: { groupOrder: 2 },
            include: ['src/**/*.browser.test.ts', 'tests/browser/**/*.browser.test.ts'],
            exclude: ['node_modules/**'],
            testTimeout: 600_000,
            hookTimeout: 600_000,
            fileParallelism: false,
            browser: chromiumBrowser(),
          },
        },
        {
          extends: true,
          test: {
            name: 'e2e',
            sequence: { groupOrder: 3 },
            globalSetup: ['tests/support/e2e-app-build.ts'],
            environment: 'node',
            include: ['tests/e2e/**/*.e2e.test.ts'],
            testTimeout: 600_000,
            hookTimeout: 600_000,
            fileParallelism: false,
          },
        },
      ],
    },
  }),
);
