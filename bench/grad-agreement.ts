// The LoRA gradients of one Flow-GRPO batch on a given device (bench/f16-agreement.ts runs it on the
// tensor-core device and the f32 one and compares): what the tensor-core paths' f16 rounding of activations,
// gradients and frozen weights does to the update itself, which logits agreement alone does not show.
// A random model of the given shapes, an r8 adapter with non-zero B (so every A has a gradient too), a group of
// `seqs` turns with alternating advantages.
import type { GpuContext } from '../src/gpu/device';
import { Qwen2Runtime } from '../src/engine/runtime';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { LORA_MODULES } from '../src/io/peft';
import { DEFAULT_GRPO_CONFIG } from '../src/trainer/grpo-config';
import { GpuPolicyBackend } from '../src/trainer/gpu-backend';
import { grpoLossAndGrads } from '../src/trainer/grpo-grad';
import { adapterTensors, initLoraAdapter } from '../src/trainer/lora-init';
import type { TurnSample } from '../src/model/samples';
import { Rng } from '../src/util/rng';
import { shapedQ4Weights, shapedWeights } from './shaped-model';

export interface GradRun {
  loss: number;
  /** PEFT tensor name -> gradient, in adapterTensors order. */
  grads: Map<string, Float32Array>;
  ms: number;
}

export async function loraGradients(ctx: GpuContext, c: Qwen2Config, o: { q4: boolean; seqs: number; tokens: number; response: number }): Promise<GradRun> {
  const t0 = performance.now();
  const rows = o.seqs * o.tokens;
  const rt = await Qwen2Runtime.create(ctx, c, o.q4 ? shapedQ4Weights(c) : shapedWeights(c), { maxContext: o.tokens + 8, maxBatchRows: rows, logitsRows: 32 });
  const adapter = initLoraAdapter(c, { r: 8, alpha: 16, modules: [...LORA_MODULES] }, new Rng(3));
  const rng = new Rng(4);
  for (const t of adapterTensors(adapter)) if (t.which === 'B') t.data.set(rng.fill(t.data.length, 0.02));
  const backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: rows, logitsRows: 32 });
  try {
    const samples: TurnSample[] = Array.from({ length: o.seqs }, (_, j) => {
      const ids = Array.from({ length: o.tokens }, (_, i) => (i * 7919 + 13 + j * 104729) % c.vocabSize);
      const lp = Array.from({ length: o.response }, (_, i) => -1 - ((i * 31 + j) % 7) / 7);
      return { groupId: 'grad', rolloutId: `r${j}`, turn: 0, promptTokens: ids.slice(0, o.tokens - o.response), responseTokens: ids.slice(o.tokens - o.response), reward: j % 2, advantage: j % 2 ? 1 : -1, oldLogprobs: lp };
    });
    const g = DEFAULT_GRPO_CONFIG;
    const r = await grpoLossAndGrads(backend, samples, { epsLow: g.epsLow, epsHigh: g.epsHigh, beta: g.beta, klClamp: g.klClamp }, rows);
    const all = await backend.readGradients();
    const grads = new Map(adapterTensors(adapter).map((t) => [t.name, all.get(t.name)!]));
    return { loss: r.loss, grads, ms: performance.now() - t0 };
  } finally {
    backend.destroy();
    rt.destroy();
  }
}

export interface GradComparison {
  loss: [number, number];
  /** ||a - b|| / ||b|| over all tensors, and the worst tensor's. */
  relativeL2: number;
  /** The tensor with the largest error relative to its own norm, with both norms (a near-zero tensor can top it). */
  worstTensor: { name: string; relativeL2: number; refNorm: number; diffNorm: number };
  /** The tensor carrying the largest share of the total error ||a - b||^2. */
  largestError: { name: string; share: number; relativeL2: number };
  refNorm: number;
  cosine: number;
  oneMinusCosine: number;
  nonFinite: number;
}

/** `a` against the reference `b` (the f32 path). */
export function compareGradients(a: GradRun, b: GradRun): GradComparison {
  let dd = 0;
  let bb = 0;
  let ab = 0;
  let aa = 0;
  let nonFinite = 0;
  let worst = { name: '', relativeL2: 0, refNorm: 0, diffNorm: 0 };
  let largest = { name: '', d2: 0, relativeL2: 0 };
  for (const [name, gb] of b.grads) {
    const ga = a.grads.get(name);
    if (!ga || ga.length !== gb.length) throw new Error(`gradient '${name}' missing or of another size on the compared path`);
    let d2 = 0;
    let b2 = 0;
    for (let i = 0; i < gb.length; i++) {
      if (!Number.isFinite(ga[i])) nonFinite++;
      const d = ga[i] - gb[i];
      d2 += d * d;
      b2 += gb[i] * gb[i];
      ab += ga[i] * gb[i];
      aa += ga[i] * ga[i];
    }
    dd += d2;
    bb += b2;
    const rel = b2 > 0 ? Math.sqrt(d2 / b2) : Math.sqrt(d2);
    if (rel > worst.relativeL2) worst = { name, relativeL2: rel, refNorm: Math.sqrt(b2), diffNorm: Math.sqrt(d2) };
    if (d2 > largest.d2) largest = { name, d2, relativeL2: rel };
  }
  const round = (x: number): number => Number(x.toPrecision(4));
  return {
    loss: [a.loss, b.loss],
    relativeL2: round(Math.sqrt(dd / bb)),
    worstTensor: { name: worst.name, relativeL2: round(worst.relativeL2), refNorm: round(worst.refNorm), diffNorm: round(worst.diffNorm) },
    largestError: { name: largest.name, share: dd > 0 ? round(largest.d2 / dd) : 0, relativeL2: round(largest.relativeL2) },
    refNorm: round(Math.sqrt(bb)),
    // 1 - cosine: the cosine itself rounds to 1 at 4 digits.
    cosine: round(ab / Math.sqrt(aa * bb)),
    oneMinusCosine: round(1 - ab / Math.sqrt(aa * bb)),
    nonFinite,
  };
}
