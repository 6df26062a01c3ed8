// npx tsx bench/markdown-render.ts [--reps N] [--module path/to/markdown.ts] [--only name,name]
// How long an answer takes to show in headless Chromium (Debian's, launched as the tests launch it) for the
// worst shapes src/ui/markdown.ts still renders as Markdown (each at one of MARKDOWN_LIMITS) and for ones it
// refuses (tests/support/markdown-shapes.ts): markdownOrText (marked, then DOMPurify) plus putting the result
// in the page and laying it out, as the chat does. `--module` bundles another copy of markdown.ts (an older
// commit's, saved with its raw-html.ts beside it) to time what it did; give it `--only` names, as a table of
// thousands of columns runs that Chromium out of memory rather than finishing. JSON on stdout, the median of
// --reps per shape, each in a fresh page.
import { build } from 'esbuild';
import { launchChromium } from '../tests/support/chromium';
import { flag, log } from './flags';
import { MARKDOWN_LIMITS as LIM } from '../src/ui/markdown';
import { acceptedShapes, refusedShapes } from '../tests/support/markdown-shapes';

const reps = Number(flag('reps', '3'));
const modulePath = flag('module', new URL('../src/ui/markdown.ts', import.meta.url).pathname);
const only = flag('only', '');

const shapes = [...acceptedShapes(LIM), ...refusedShapes(LIM)];

const bundle = await build({ entryPoints: [modulePath], bundle: true, format: 'iife', globalName: 'md', write: false, nodePaths: [new URL('../node_modules', import.meta.url).pathname] });
const browser = await launchChromium({ webgpu: false });
try {
  const out: Record<string, { inputChars: number; shown: string; htmlChars: number; ms: number[]; medianMs: number }> = {};
  for (const { name, text } of shapes) {
    if (only && !only.split(',').some((o) => name.includes(o))) continue;
    const ms: number[] = [];
    let shown = '';
    let htmlChars = 0;
    for (let r = 0; r < reps; r++) {
      // A fresh page per run: nothing memoised, no DOM left from the last shape.
      const page = await browser.newPage();
      await page.setContent('<!doctype html><div id="out"></div>');
      await page.addScriptTag({ content: bundle.outputFiles[0].text });
      const res = await page.evaluate((t) => {
        const m = (globalThis as unknown as { md: typeof import('../src/ui/markdown') }).md;
        const el = document.getElementById('out')!;
        const t0 = performance.now();
        const r = m.markdownOrText(t);
        if ('html' in r) el.innerHTML = r.html;
        else el.textContent = r.text;
        void el.offsetHeight;
        return { ms: performance.now() - t0, shown: 'html' in r ? 'markdown' : r.why, htmlChars: 'html' in r ? r.html.length : 0 };
      }, text);
      await page.close();
      ms.push(Math.round(res.ms));
      shown = res.shown;
      htmlChars = res.htmlChars;
    }
    const medianMs = [...ms].sort((a, b) => a - b)[Math.floor(ms.length / 2)];
    out[name] = { inputChars: text.length, shown, htmlChars, ms, medianMs };
    log(`${name}: ${medianMs} ms (${shown}, ${htmlChars} chars of HTML)`);
  }
  console.log(JSON.stringify(out, null, 1));
} finally {
  await browser.close();
}
