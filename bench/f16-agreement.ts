// npx tsx bench/f16-agreement.ts [--shape 0.5b] [--q4 1] [--prompt 64] [--decode 16] [--layers N] [--vocab V]
//   [--grad-seqs 4] [--grad-tokens 128] [--grad-response 32] [--kernel-shapes none|name:KxN,...] [--emulate-sgm 1]:
// whether the runtime's two kernel paths agree on THIS GPU. One process makes two devices from the same Dawn
// instance, one with `shader-f16` (the f16 path) and one without (the packed-f16 / f32 path), loads the same
// random-valued model on each and compares the last row's logits of a prompt, the scored log-probs of the prompt
// and a greedy decode. Both paths are checked against float64 references on lavapipe and SwiftShader in CI;
// what this adds is the real GPU's driver: Dawn keeps `shader-f16` off on NVIDIA for f16 conformance crashes
// (src/gpu/device.ts nodeDawnFlags turns it on), so before an f16 figure counts, the f16 path must give the
// f32 path's answers there. Where the adapter offers subgroup matrices (tensor cores; Dawn's unsafe
// `chromium-experimental-subgroup-matrix`, opted into here with requestGpu({ subgroupMatrix: true })), a third
// device runs the same model on tensor cores (its layer matrices get f16 copies there, read by
// src/kernels/matmul/matmul.sgm.ts; the LM head stays on the 4-bit kernels; f16-rounded operands, f32 sums)
// and `sgm` compares it with the f32 path. JSON on stdout, progress on stderr. A kit
// part (`f16-check`).
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { Qwen2Runtime } from '../src/engine/runtime';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { flag, log } from './flags';
import { compareGradients, loraGradients, type GradRun } from './grad-agreement';
import { BACKWARD_SHAPES, compareBackwardKernels, compareQ4Kernels, FORWARD_SHAPES, TRAINING_SHAPES, type BackwardRow, type ShapeRow } from './q4-mma-kernel';
import { parseShapes } from './subgroup-matrix-check';
import { shapedQ4Weights, shapedWeights, shapeNamed } from './shaped-model';

/**
 * The relative logit gap above which the paths are called different. Both store f16 and compute in f32 in the
 * same order, so on lavapipe they agree to the bit (0 on 2 layers of the 0.5B shapes, 4-bit and f16 weights);
 * anything past f32 rounding on a GPU points at its driver's f16 storage.
 */
export const AGREE_RELATIVE = 1e-3;

/**
 * The same bound for the subgroup-matrix path, whose kernel rounds activations and dequantised weights to
 * f16 (11-bit significands) before multiplying: a few 2^-11 relative errors per product, mostly averaging out
 * over the sums, on top of what the f16 path already differs by.
 */
export const AGREE_SGM_RELATIVE = 5e-3;

interface PathRun {
  f16: boolean;
  logits: Float32Array;
  logprobs: number[];
  tokens: number[];
  ms: number;
  /** Labels of the subgroup-matrix pipelines this run built (evidence the kernel ran). */
  sgmPipelines: string[];
  /**
   * generateBatch's contract on this path: two prompts (64+ tokens, so their packed prefill spans shared blocks)
   * decoded together give each the tokens and logprobs it gets alone, to the bit.
   */
  batchSameAsAlone: boolean;
  batchLogprobMaxDiff: number;
}

/** The comparison of `a` with the reference run `ref`; agree when the largest logit gap over the largest |logit| is within `bound`. */
export function comparePaths(a: Pick<PathRun, 'logits' | 'logprobs' | 'tokens'>, ref: Pick<PathRun, 'logits' | 'logprobs' | 'tokens'>, bound: number): Record<string, number | boolean> {
  let scale = 0;
  for (const v of ref.logits) scale = Math.max(scale, Math.abs(v));
  const logitGap = maxAbsDiff(a.logits, ref.logits);
  const relative = scale > 0 ? logitGap / scale : logitGap;
  return {
    logitsMaxAbsDiff: logitGap,
    logitsMaxAbs: scale,
    logitsRelative: relative,
    argmaxSame: argmax(a.logits) === argmax(ref.logits),
    scoreMaxAbsDiff: maxAbsDiff(a.logprobs, ref.logprobs),
    greedySameTokens: commonPrefix(a.tokens, ref.tokens),
    greedyTokens: ref.tokens.length,
    agree: relative <= bound,
    agreeRelative: bound,
  };
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
  // Which pipelines are built tells whether a subgroup-matrix kernel took part (ops.linear chooses them).
  const sgmPipelines = new Set<string>();
  const create = ctx.device.createComputePipelineAsync.bind(ctx.device);
  ctx.device.createComputePipelineAsync = (d: GPUComputePipelineDescriptor) => {
    if (d.label?.includes('matmul_mma')) sgmPipelines.add(d.label);
    return create(d);
  };
  const maxContext = prompt.length + 16 + decode + 8;
  const rt = await Qwen2Runtime.create(ctx, config, q4 ? shapedQ4Weights(config) : shapedWeights(config), { maxContext, batchContext: 2 * maxContext });
  try {
    const logits = await rt.logitsLast(prompt);
    const [logprobs] = await rt.score([prompt]);
    const gen = await rt.generate(prompt, { maxNewTokens: decode, temperature: 0 });
    const second = [...prompt.slice(5), ...prompt.slice(0, 16)];
    const reqs = [prompt, second].map((p) => ({ prompt: p, options: { maxNewTokens: Math.min(decode, 8), temperature: 0, reusePrefix: false } }));
    const alone = [];
    for (const r of reqs) alone.push(await rt.generate(r.prompt, r.options));
    const together = await rt.generateBatch(reqs);
    let batchLogprobMaxDiff = 0;
    let batchSameAsAlone = true;
    for (const [i, g] of together.entries()) {
      if (g.tokens.join() !== alone[i].tokens.join()) batchSameAsAlone = false;
      for (const [k, lp] of g.logprobs.entries()) {
        const d = Math.abs(lp - (alone[i].logprobs[k] ?? NaN));
        if (!(d === 0)) batchSameAsAlone = false;
        batchLogprobMaxDiff = Math.max(batchLogprobMaxDiff, Number.isNaN(d) ? Infinity : d);
      }
    }
    return { f16: ctx.caps.f16, logits, logprobs, tokens: gen.tokens, ms: performance.now() - t0, sgmPipelines: [...sgmPipelines].sort(), batchSameAsAlone, batchLogprobMaxDiff };
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

  // The first device makes the process's Dawn instance: asking it for subgroup matrices gives the instance
  // allow_unsafe_apis, so the adapter shows whether they are offered; the f16 and f32 devices never use them.
  // --emulate-sgm 1 (diagnostics on a GPU without the feature, e.g. lavapipe): the tensor-core path's numerics with
  // each matrix operation emulated by per-lane loops (GpuRequestOptions.emulateSubgroupMatrix); slow.
  const emulate = flag('emulate-sgm', '0') === '1';
  const sgmCtx = await requestGpu(emulate ? { emulateSubgroupMatrix: { M: 16, N: 16, K: 16, subgroupSize: 32 } } : { subgroupMatrix: true });
  const sgmShape = sgmCtx.caps.subgroupMatrix;
  const out: Record<string, unknown> = {
    device: sgmCtx.caps.description,
    model: `${flag('shape', '0.5b')} shapes (${layers} layers, vocab ${vocab}), ${q4 ? 'q4f16_1' : 'f16'}, random values`,
    prompt: promptLen,
    decode,
    f16Offered: sgmCtx.caps.f16,
  };
  if (!sgmCtx.caps.f16) {
    out.compared = false;
    out.why = 'the adapter offers no shader-f16: only the f32 path runs here';
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
    return;
  }
  // The LoRA gradients of one Flow-GRPO batch on each device (bench/grad-agreement.ts): --grad-seqs 0 skips.
  const grad = { q4, seqs: Number(flag('grad-seqs', '4')), tokens: Number(flag('grad-tokens', '128')), response: Number(flag('grad-response', '32')) };
  const gradsOn = async (ctx: GpuContext, what: string): Promise<GradRun | string | null> => {
    if (grad.seqs <= 0) return null;
    log(`f16-agreement: LoRA gradients, ${what}`);
    return loraGradients(ctx, config, grad).catch((e: Error) => e.message);
  };
  let gradSgm: GradRun | string | null = null;
  let c: PathRun | undefined;
  let kernel: ShapeRow[] | string | undefined;
  let kernelBackward: BackwardRow[] | string | undefined;
  if (sgmShape && q4) {
    log(`f16-agreement: subgroup-matrix path (f16 -> f32 ${sgmShape.M}x${sgmShape.N}x${sgmShape.K})`);
    c = await runPath(sgmCtx, config, q4, prompt, decode);
    gradSgm = await gradsOn(sgmCtx, 'subgroup-matrix path');
    const spec = flag('kernel-shapes', '');
    if (spec !== 'none') {
      log('f16-agreement: tiled vs subgroup-matrix 4-bit matmul');
      const shapes = spec ? parseShapes(spec, Number(flag('kernel-rows', '768'))) : [...TRAINING_SHAPES, ...FORWARD_SHAPES];
      kernel = await compareQ4Kernels(sgmCtx, shapes, { reps: Number(flag('kernel-reps', '10')), samples: 48 }).catch((e: Error) => e.message);
      log('f16-agreement: tiled vs subgroup-matrix input gradients');
      kernelBackward = await compareBackwardKernels(sgmCtx, spec ? shapes : BACKWARD_SHAPES, { reps: Number(flag('kernel-reps', '10')), samples: 48 }).catch((e: Error) => e.message);
    }
  }
  sgmCtx.device.destroy();
  log('f16-agreement: f16 path');
  const f16Ctx = await requestGpu({ subgroupMatrix: false });
  const a = await runPath(f16Ctx, config, q4, prompt, decode);
  const gradF16 = await gradsOn(f16Ctx, 'f16 path');
  f16Ctx.device.destroy();
  log('f16-agreement: f32 path');
  const f32Ctx = await requestGpu({ f16: false, subgroupMatrix: false });
  const b = await runPath(f32Ctx, config, q4, prompt, decode);
  const gradF32 = await gradsOn(f32Ctx, 'f32 path');
  f32Ctx.device.destroy();
  // Each path's gradients against the f32 path's (a string: why that run failed).
  const gradVsF32 = (g: GradRun | string | null): unknown => {
    if (g === null || gradF32 === null) return null;
    if (typeof g === 'string' || typeof gradF32 === 'string') return { error: typeof g === 'string' ? g : gradF32 };
    return { ...compareGradients(g, gradF32), ms: Math.round(g.ms) };
  };

  Object.assign(out, { compared: true, paths: [a, b].map((r) => ({ f16: r.f16, ms: Math.round(r.ms), batchSameAsAlone: r.batchSameAsAlone, batchLogprobMaxDiff: r.batchLogprobMaxDiff })), ...comparePaths(a, b, AGREE_RELATIVE), gradients: gradVsF32(gradF16) });
  out.sgm = c
    ? { offered: true, shape: sgmShape, pipelines: c.sgmPipelines, ms: Math.round(c.ms), batchSameAsAlone: c.batchSameAsAlone, batchLogprobMaxDiff: c.batchLogprobMaxDiff, ...comparePaths(c, b, AGREE_SGM_RELATIVE), gradients: gradVsF32(gradSgm), kernel: kernel ?? null, kernelBackward: kernelBackward ?? null }
    : { offered: !!sgmShape, why: sgmShape ? 'the subgroup-matrix kernel is 4-bit only (--q4 0)' : 'no subgroup matrices with an f16 -> f32 config here' };
  if (c && c.sgmPipelines.length === 0) Object.assign(out.sgm as object, { agree: false, why: 'no subgroup-matrix pipeline was built: the kernel did not run' });
  log(`f16-agreement: logits rel ${(out.logitsRelative as number).toExponential(2)}, argmax ${out.argmaxSame ? 'same' : 'differs'}, greedy ${out.greedySameTokens}/${decode} shared`);
  const sgm = out.sgm as Record<string, unknown>;
  if (typeof sgm.logitsRelative === 'number') log(`f16-agreement: subgroup-matrix logits rel ${sgm.logitsRelative.toExponential(2)} to the f32 path, greedy ${String(sgm.greedySameTokens)}/${decode} shared`);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
}

if (process.argv[1] && /f16-(agreement|check)/.test(process.argv[1])) {
  main().catch((e: Error) => {
    log(`f16-agreement failed: ${e.stack ?? e.message}`);
    process.exit(1);
  });
}
