// The one owner of the forward pass's working buffers for a packed batch of N rows. Inference shares
// one set of buffers across layers (the residual stream is updated in place); with `keep` every layer
// gets its own copies of what the LoRA backward needs (x, h, rstd, q/k/v after RoPE, attention out and
// lse, gate, up, LoRA t), so the trainer can run the forward once and walk the layers backwards.
import type { GpuContext } from '../gpu/device';
import { createStorageChecked } from '../gpu/buffers';
import type { Qwen2Config } from '../io/qwen2-config';
import { LORA_MODULES, type LoraModule } from '../io/peft';

/**
 * One layer's activations for a packed batch of N rows (llm.c's ActivationTensors, per layer). Every
 * field is row-major f32 with N rows; its width per row is in layerActivationWidths() below, the one
 * place the layout is written in numbers (allocation and the trainer's memory plan both read it).
 * The forward (model/forward.ts) writes them top to bottom; the backward (model/backward.ts) reads
 * them bottom to top.
 */
export interface LayerActivations {
  /** (N, H) layer input (residual stream before attention). */
  x: GPUBuffer;
  /** (N, H) residual after attention, `x + o(attn)`. */
  h: GPUBuffer;
  /** (N, 1) rstd of input_layernorm and of post_attention_layernorm. */
  rstd1: GPUBuffer;
  rstd2: GPUBuffer;
  /** (N, H) normalised inputs of q/k/v (rms1(x)) and of gate/up (rms2(h)): the LoRA backward's x. */
  xn1: GPUBuffer;
  xn2: GPUBuffer;
  /** (N, nH*hd), (N, nKV*hd), (N, nKV*hd): q and k after RoPE, v (no RoPE). */
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  /** (N, nH*hd) attention output (input of o_proj); (N, nH) its log-sum-exp per head. */
  attn: GPUBuffer;
  lse: GPUBuffer;
  /** (N, I) gate and up projections. */
  gate: GPUBuffer;
  up: GPUBuffer;
  /** (N, I) silu(gate) * up, the input of down_proj. */
  act: GPUBuffer;
  /** (N, r) per LoRA module: `x A^T`, r = the plan's largest rank. */
  t: Record<LoraModule, GPUBuffer>;
}

/** The per-layer buffers other than the LoRA t's. */
export type LayerField = Exclude<keyof LayerActivations, 't'>;

/** f32 words per row of each LayerActivations field (t: per module), for a config and LoRA rank. */
export function layerActivationWidths(c: Qwen2Config, rank: number): Record<LayerField, number> & { t: number } {
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  return { x: H, h: H, rstd1: 1, rstd2: 1, xn1: H, xn2: H, q: qd, k: kvd, v: kvd, attn: qd, lse: c.numHeads, gate: I, up: I, act: I, t: rank };
}

/** 32-bit words per row one layer keeps for the backward (every field, t once per LoRA module). */
export function keptWordsPerLayer(c: Qwen2Config, rank: number): number {
  const { t, ...rest } = layerActivationWidths(c, rank);
  return Object.values(rest).reduce((a, b) => a + b, 0) + LORA_MODULES.length * t;
}

/**
 * 32-bit words per row of the plan's buffers outside the layers: ids, pos, ranges (2), targets (u32); the
 * residual after the last layer, the final norm's output (H each) and rstd; log p(target) and lse.
 */
export function planRowWords(c: Qwen2Config): number {
  return 1 + 1 + 2 + 1 + 2 * c.hiddenSize + 1 + 1 + 1;
}

export interface ActivationPlanOptions {
  /** Rows in the packed batch. */
  rows: number;
  /** Keep per-layer activations for a backward pass. */
  keep?: boolean;
  /** Largest LoRA rank the plan must hold (0: no LoRA scratch). */
  loraRank?: number;
  /** Rows of logits computed at once (default: all rows, capped by the binding size). */
  logitsRows?: number;
}

export class ActivationPlan {
  readonly rows: number;
  readonly keep: boolean;
  readonly loraRank: number;
  readonly logitsRows: number;
  /** [N] u32 token ids, positions, [N, 2] key ranges, [N] targets. */
  ids!: GPUBuffer;
  pos!: GPUBuffer;
  ranges!: GPUBuffer;
  targets!: GPUBuffer;
  layers: LayerActivations[] = [];
  /** [N, H] the residual stream after the last layer, its final-norm output and rstd. */
  xOut!: GPUBuffer;
  xFinal!: GPUBuffer;
  rstdFinal!: GPUBuffer;
  /** [logitsRows, V], and its input rows [logitsRows, H] when they are not all of xFinal. */
  logits!: GPUBuffer;
  logitsIn!: GPUBuffer;
  /** [N] log p(target) per row and the log-sum-exp of each row's logits (saved for the backward). */
  logprobs!: GPUBuffer;
  lse!: GPUBuffer;
  /** Per logits chunk: targets u32 [logitsRows], running stats [logitsRows, 3], lse and logprob [logitsRows]. */
  chunkTargets!: GPUBuffer;
  chunkStats!: GPUBuffer;
  chunkLse!: GPUBuffer;
  chunkLogprob!: GPUBuffer;
  bytes = 0;
  private readonly owned: GPUBuffer[] = [];

  private constructor(readonly config: Qwen2Config, o: ActivationPlanOptions, maxBinding: number) {
    this.rows = o.rows;
    this.keep = !!o.keep;
    this.loraRank = o.loraRank ?? 0;
    const byBinding = Math.max(1, Math.floor(maxBinding / (config.vocabSize * 4)));
    this.logitsRows = Math.max(1, Math.min(o.logitsRows ?? o.rows, o.rows, byBinding));
  }

  static async create(ctx: GpuContext, config: Qwen2Config, o: ActivationPlanOptions): Promise<ActivationPlan> {
    if (!Number.isInteger(o.rows) || o.rows < 1) throw new Error(`activation plan: rows must be a positive integer, got ${o.rows}`);
    const plan = new ActivationPlan(config, o, Math.min(ctx.caps.limits.maxStorageBufferBindingSize, ctx.caps.limits.maxBufferSize));
    try {
      await plan.allocate(ctx);
    } catch (e) {
      plan.destroy();
      throw e;
    }
    return plan;
  }

  private async buf(ctx: GpuContext, label: string, bytes: number): Promise<GPUBuffer> {
    const b = await createStorageChecked(ctx, `act.${label}`, bytes);
    this.owned.push(b);
    this.bytes += b.size;
    return b;
  }

  private async allocate(ctx: GpuContext): Promise<void> {
    const c = this.config;
    const N = this.rows;
    const H = c.hiddenSize;
    const f = 4;
    this.ids = await this.buf(ctx, 'ids', N * 4);
    this.pos = await this.buf(ctx, 'pos', N * 4);
    this.ranges = await this.buf(ctx, 'ranges', N * 8);
    this.targets = await this.buf(ctx, 'targets', N * 4);
    const width = layerActivationWidths(c, Math.max(1, this.loraRank));
    const makeLayer = async (tag: string, x: GPUBuffer): Promise<LayerActivations> => {
      const field = (name: LayerField) => this.buf(ctx, `${tag}.${name}`, N * width[name] * f);
      const xn1 = await field('xn1');
      const t = {} as Record<LoraModule, GPUBuffer>;
      // Without LoRA the t buffers are never bound; point them at a real buffer to keep the type simple.
      for (const m of LORA_MODULES) t[m] = this.loraRank ? await this.buf(ctx, `${tag}.t.${m}`, N * width.t * f) : xn1;
      return {
        x,
        h: await field('h'),
        xn1,
        // Inference is done with rms1(x) once q/k/v are made, so rms2(h) reuses its buffer.
        xn2: this.keep ? await field('xn2') : xn1,
        rstd1: await field('rstd1'),
        rstd2: await field('rstd2'),
        q: await field('q'),
        k: await field('k'),
        v: await field('v'),
        attn: await field('attn'),
        lse: await field('lse'),
        gate: await field('gate'),
        up: await field('up'),
        act: await field('act'),
        t,
      };
    };
    if (this.keep) {
      let x = await this.buf(ctx, 'layer0.x', N * H * f);
      for (let l = 0; l < c.numLayers; l++) {
        const la = await makeLayer(`layer${l}`, x);
        this.layers.push(la);
        x = await this.buf(ctx, `layer${l + 1}.x`, N * H * f);
      }
      this.xOut = x;
    } else {
      // Inference: x and h are two buffers the layers ping-pong through (x -> h -> x), everything else shared.
      const x = await this.buf(ctx, 'x', N * H * f);
      const shared = await makeLayer('shared', x);
      for (let l = 0; l < c.numLayers; l++) this.layers.push(shared);
      this.xOut = x;
    }
    this.xFinal = await this.buf(ctx, 'xFinal', N * H * f);
    this.rstdFinal = await this.buf(ctx, 'rstdFinal', N * f);
    this.logits = await this.buf(ctx, 'logits', this.logitsRows * c.vocabSize * f);
    this.logitsIn = await this.buf(ctx, 'logitsIn', this.logitsRows * H * f);
    this.logprobs = await this.buf(ctx, 'logprobs', N * f);
    this.lse = await this.buf(ctx, 'lse', N * f);
    const C = this.logitsRows;
    this.chunkTargets = await this.buf(ctx, 'chunkTargets', C * 4);
    this.chunkStats = await this.buf(ctx, 'chunkStats', C * 3 * f);
    this.chunkLse = await this.buf(ctx, 'chunkLse', C * f);
    this.chunkLogprob = await this.buf(ctx, 'chunkLogprob', C * f);
  }

  /** The residual stream a layer writes: the next layer's x (its own buffer with keep, else shared). */
  nextX(l: number): GPUBuffer {
    return l + 1 < this.layers.length ? this.layers[l + 1].x : this.xOut;
  }

  destroy(): void {
    for (const b of this.owned) b.destroy();
    this.owned.length = 0;
  }
}
