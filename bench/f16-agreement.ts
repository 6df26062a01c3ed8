// npx tsx bench/f16-agreement.ts [--shape 0.5b] [--q4 1] [--prompt 64] [--decode 16] [--layers N] [--vocab V]:
// whether the runtime's two kernel paths agree on THIS GPU. One process makes two devices from the same Dawn
// instance, one with `shader-f16` (the f16 path) and one without (the packed-f16 / f32 path), loads the same
// random-valued model on each and compares the last row's logits of a prompt, the scored log-probs of the prompt
// and a greedy decode. Both paths are checked against float64 references on lavapipe and SwiftShader in CI;
// what this adds is the real GPU's driver: Dawn keeps `shader-f16` off on NVIDIA for f16 conformance crashes
// (src/gpu/device.ts nodeDawnFlags turns it on), so before an f16 figure counts, the f16 path must give the
// f32 path's answers there. JSON on stdout, progress on stderr. A kit part (`f16-check`).
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { Qwen2Runtime } from '../src/engine/runtime';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { flag, log } from './flags';
import { shapedQ4Weights, shapedWeights, shapeNamed } from './shaped-model';

/**
 * The relative logit gap above which the paths are called different. Both store f16 and compute in f32 in the
 * same order, so on lavapipe they agree to the bit (0 on 2 layers of the 0.5B shapes, 4-bit and f16 weights);
 * anything past f32 rounding on a GPU points at its driver's f16 storage.
 */
export const AGREE_RELATIVE = 1e-3;

interface PathRun {
  f16: boolean;
  logits: Float32Array;
  logprobs: number[];
  tokens: number[];
  ms: number;
}

/** Largest |a - b| over two equal-length arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`f16-agreement: lengths differ (${a.length} vs ${b.length})`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Index of the largest entry. */
export function argmax(a: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
  return best;
}

/** How many leading tokens two decodes share. */
export function commonPrefix(a: number[], b: number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

async function runPath(ctx: GpuContext, config: Qwen2Config, q4: boolean, prompt: number[], decode: number): Promise<PathRun> {
  const t0 = performance.now();
  const rt = await Qwen2Runtime.create(ctx, config, q4 ? shapedQ4Weights(config) : shapedWeights(config), { maxContext: prompt.length + decode + 8 });
  try {
    const logits = await rt.logitsLast(prompt);
    const [logprobs] = await rt.score([prompt]);
    const gen = await rt.generate(prompt, { maxNewTokens: decode, temperature: 0 });
    return { f16: ctx.caps.f16, logits, logprobs, tokens: gen.tokens, ms: performance.now() - t0 };
  } finally {
    rt.destroy();
  }
}

async function main(): Promise<void> {
  const base = shapeNamed(flag('shape', '0.5b'));
  const layers = Number(flag('layers', String(base.numLayers)));
  const vocab = Number(flag('vocab', String(base.vocabSize)));
  const config: Qwen2Config = { ...base, numLayers: layers, vocabSize: vocab };
  const q4 = flag('q4', '1') === '1';
  const promptLen = Number(flag('prompt', '64'));
  const decode = Number(flag('decode', '16'));
  const prompt = Array.from({ length: promptLen }, (_, i) => (i * 7919 + 13) % vocab);

  const f16Ctx = await requestGpu();
  const out: Record<string, unknown> = {
    device: f16Ctx.caps.description,
    model: `${flag('shape', '0.5b')} shapes (${layers} layers, vocab ${vocab}), ${q4 ? 'q4f16_1' : 'f16'}, random values`,
    prompt: promptLen,
    decode,
    f16Offered: f16Ctx.caps.f16,
  };
  if (!f16Ctx.caps.f16) {
    out.compared = false;
    out.why = 'the adapter offers no shader-f16: only the f32 path runs here';
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
    return;
  }
  log('f16-agreement: f16 path');
  const a = await runPath(f16Ctx, config, q4, prompt, decode);
  f16Ctx.device.destroy();
  log('f16-agreement: f32 path');
  const f32Ctx = await requestGpu({ f16: false });
  const b = await runPath(f32Ctx, config, q4, prompt, decode);
  f32Ctx.device.destroy();

  let scale = 0;
  for (const v of b.logits) scale = Math.max(scale, Math.abs(v));
  const logitGap = maxAbsDiff(a.logits, b.logits);
  const relative = scale > 0 ? logitGap / scale : logitGap;
  Object.assign(out, {
    compared: true,
    paths: [a, b].map((r) => ({ f16: r.f16, ms: Math.round(r.ms) })),
    logitsMaxAbsDiff: logitGap,
    logitsMaxAbs: scale,
    logitsRelative: relative,
    argmaxSame: argmax(a.logits) === argmax(b.logits),
    scoreMaxAbsDiff: maxAbsDiff(a.logprobs, b.logprobs),
    greedySameTokens: commonPrefix(a.tokens, b.tokens),
    greedyTokens: decode,
    agree: relative <= AGREE_RELATIVE,
    agreeRelative: AGREE_RELATIVE,
  });
  log(`f16-agreement: logits rel ${relative.toExponential(2)}, argmax ${out.argmaxSame ? 'same' : 'differs'}, greedy ${out.greedySameTokens}/${decode} shared`);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
}

if (process.argv[1] && /f16-(agreement|check)/.test(process.argv[1])) {
  main().catch((e: Error) => {
    log(`f16-agreement failed: ${e.stack ?? e.message}`);
    process.exit(1);
  });
}
