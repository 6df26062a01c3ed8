// The GPU forward + backward of the whole Qwen2 model for LoRA gradients, for one packed micro-batch.
// It chains the engine's forward (recordForward with a `keep` activation plan, so every layer's
// activations survive) with the backward kernels, in reverse:
//   grpo kernel: dL/dlogp per row
//   per chunk of response rows: logits again -> dlogits (in place, per vocab chunk) -> LM-head backward -> dnF
//   final RMSNorm backward -> dX (gradient of the residual stream)
//   per layer, last to first:
//     MLP:  down^T (+ LoRA down grads), SwiGLU backward, gate^T and up^T (+ LoRA), RMSNorm2 backward added to dX
//     attn: o^T (+ LoRA o), attention backward, RoPE backward, q^T k^T v^T (+ LoRA q/k/v), RMSNorm1 backward added to dX
// Only LoRA A/B get gradients (accumulated across micro-batches); base weights are frozen, so no weight
// gradient of W is ever formed.
//
// Memory: training-memory.ts (what is kept per layer, the scratch below, bytes per row).
import type { GpuContext } from '../gpu/device';
import { createStorageChecked, readBuffer, writeBuffer } from '../gpu/buffers';
import type { Dispatch } from '../gpu/pipelines';
import { ActivationPlan } from './activations';
import type { GpuAdapter, GpuLoraPair } from './adapters';
import { recordForward, recordLogits, recordTargetLogprobs, ROW0_INPUT } from './forward';
import { copyStep, dispatchStep, encodeInput, encodeSteps, type Offset, type Step } from './graph';
import type { Qwen2Config } from '../io/qwen2-config';
import { LORA_MODULES, type LoraModule } from '../io/peft';
import type { Qwen2Weights } from './weights';
import { attentionBackward } from '../kernels/attention/attention.backward';
import { grpoLoss as grpoKernel } from '../kernels/grpo/grpo';
import { dlogits } from '../kernels/logits/logits.backward';
import { loraBackward } from '../kernels/lora/lora.backward';
import { linearBackward, lmHeadBackward } from './ops';
import { splitKPartialsBytes } from '../kernels/matmul/matmul.splitk';
import { rmsnormBackward } from '../kernels/rmsnorm/rmsnorm.backward';
import { ropeBackward } from '../kernels/rope/rope.backward';
import { swigluBackward } from '../kernels/swiglu/swiglu.backward';
import type { GrpoLossParams } from './loss';
import type { PackedBatch } from './samples';
import { ROW_INPUT_WIDTHS, scratchWidths, type RowInputField, type ScratchField } from './training-memory';

/** Gradient accumulators of one LoRA pair, same shapes as its A and B. */
export interface GpuLoraGrad {
  dA: GPUBuffer;
  dB: GPUBuffer;
}

/** Computed rows of a micro-batch are its real rows rounded up to a multiple of this. */
const ROW_STEP = 64;

/** Per-micro-batch inputs of the backward, all per row of the packed batch. */
type RowInputs = Record<RowInputField, GPUBuffer>;

/**
 * Owns a `keep` activation plan for `rows` rows and the backward's scratch, and records the forward and
 * backward once per computed row count (a micro-batch's rows rounded up to a multiple of ROW_STEP); each
 * micro-batch of at most `rows` rows is then written into its storage buffers and encoded again (padding
 * rows attend only to themselves and carry zero loss weight).
 */
export class LoraBackwardPass {
  private plan!: ActivationPlan;
  private inputs!: RowInputs;
  /**
   * Scratch per row (training-memory.ts) and per logits chunk (dxChunk, chunkTargets, chunkLse, chunkDlogp,
   * and headPartials: the LM-head backward's split-K partial sums).
   */
  private s!: Record<ScratchField | 'dxChunk' | 'chunkTargets' | 'chunkLse' | 'chunkDlogp' | 'headPartials', GPUBuffer>;
  /** Forward and backward step lists per computed row count (see computedRows). */
  private records = new Map<number, { forward: Step[]; backward: Step[] }>();
  /** The grpo loss step per computed row count and loss settings. */
  private grpoRecords = new Map<string, Step[]>();
  private chunkFwd = new Map<number, Step[]>();
  private chunkBwd = new Map<number, Step[]>();
  private readonly owned: GPUBuffer[] = [];

  private constructor(
    readonly ctx: GpuContext,
    readonly weights: Qwen2Weights,
    readonly adapter: GpuAdapter,
    readonly grads: Map<string, GpuLoraGrad>,
    readonly rows: number,
    readonly logitsRows: number,
  ) {}

  static async create(ctx: GpuContext, weights: Qwen2Weights, adapter: GpuAdapter, grads: Map<string, GpuLoraGrad>, rows: number, logitsRows = 32): Promise<LoraBackwardPass> {
    const p = new LoraBackwardPass(ctx, weights, adapter, grads, rows, logitsRows);
    try {
      await p.allocate();
      // The full-size recording, so every pipeline is compiled before the first step.
      await p.recordsFor(rows);
    } catch (e) {
      p.destroy();
      throw e;
    }
    return p;
  }

  get bytes(): number {
    return this.plan.bytes + this.owned.reduce((s, b) => s + b.size, 0);
  }

  private async buf(label: string, bytes: number): Promise<GPUBuffer> {
    const b = await createStorageChecked(this.ctx, `train.${label}`, bytes);
    this.owned.push(b);
    return b;
  }

  private async allocate(): Promise<void> {
    const c = this.weights.config;
    const N = this.rows;
    const H = c.hiddenSize;
    this.plan = await ActivationPlan.create(this.ctx, c, { rows: N, keep: true, loraRank: this.adapter.maxRank, logitsRows: this.logitsRows });
    const C = this.plan.logitsRows;
    const f = 4;
    const perRow = async <K extends string>(widths: Record<K, number>) => {
      const out = {} as Record<K, GPUBuffer>;
      for (const [name, w] of Object.entries(widths) as Array<[K, number]>) out[name] = await this.buf(name, N * w * f);
      return out;
    };
    this.inputs = await perRow(ROW_INPUT_WIDTHS);
    this.s = {
      ...(await perRow(scratchWidths(c, Math.max(1, this.adapter.maxRank)))),
      dxChunk: await this.buf('dxChunk', C * H * f),
      chunkTargets: await this.buf('chunkTargets', C * 4),
      chunkLse: await this.buf('chunkLse', C * f),
      chunkDlogp: await this.buf('chunkDlogp', C * f),
      headPartials: await this.buf('headPartials', splitKPartialsBytes(C, H)),
    };
  }

  /**
   * Rows a micro-batch of `rows` real rows is computed over: rounded up to a multiple of ROW_STEP (at most
   * the pass's rows). A pass sized for 768 rows then computes a 512-token turn over 512 rows, not 768, and
   * each length class is recorded once.
   */
  computedRows(rows: number): number {
    return Math.min(this.rows, Math.max(ROW_STEP, Math.ceil(rows / ROW_STEP) * ROW_STEP));
  }

  /** The forward (keeping activations) and backward step lists over n rows, recorded once per n. */
  private async recordsFor(n: number): Promise<{ forward: Step[]; backward: Step[] }> {
    let r = this.records.get(n);
    if (!r) {
      r = await this.record(n);
      this.records.set(n, r);
    }
    return r;
  }

  private async record(n: number): Promise<{ forward: Step[]; backward: Step[] }> {
    const ctx = this.ctx;
    const w = this.weights;
    const c = w.config;
    const H = c.hiddenSize;
    const qd = c.numHeads * c.headDim;
    const kvd = c.numKvHeads * c.headDim;
    const I = c.intermediateSize;
    const s = this.s;
    const forward = await recordForward(ctx, { plan: this.plan, weights: w, adapter: this.adapter, n });

    const steps: Step[] = [];
    const add = (d: Dispatch | Dispatch[]) => {
      for (const x of Array.isArray(d) ? d : [d]) steps.push(dispatchStep(x));
    };
    // Final norm: dnF (filled chunk by chunk) -> dX.
    add(await rmsnormBackward(ctx, { dy: s.dnF, x: this.plan.xOut, w: w.finalNorm, rstd: this.plan.rstdFinal, dx: s.dX, n, hidden: H }));
    // One layer's forward (model/forward.ts, run top down) beside its backward below (run bottom up).
    // The backward reads the kept activations L.* (LayerActivations) and writes the scratch s.*:
    //   forward                              backward                                       reads
    //   xn1, rstd1 = rms1(x)                 dX  += rms1'(dn)                               x, rstd1
    //   q, k, v = W xn1 + b (+ LoRA)         dn   = Wq^T dq + Wk^T dk + Wv^T dv (+ LoRA)     xn1, t
    //   q, k = rope(q, k)                    dq, dk = rope^T(dq, dk)                        pos
    //   attn, lse = attention(q, k, v)       dq, dk, dv = attention'(datt)                  q, k, v, attn, lse
    //   h = x + Wo attn (+ LoRA)             datt = Wo^T dX (+ LoRA o)                      attn, t
    //   xn2, rstd2 = rms2(h)                 dX  += rms2'(dn)                               h, rstd2
    //   gate, up = W xn2 (+ LoRA)            dn   = Wg^T dgate + Wu^T dup (+ LoRA)          xn2, t
    //   act = silu(gate) * up                dgate, dup = swiglu'(dact)                     gate, up
    //   x' = h + Wd act (+ LoRA)             dact = Wd^T dX (+ LoRA down)                   act, t
    // dX carries d(residual) through both residual adds; LoRA steps also accumulate dA, dB.
    for (let l = c.numLayers - 1; l >= 0; l--) {
      const L = this.plan.layers[l];
      const W = w.layers[l];
      const lora = async (m: LoraModule, x: GPUBuffer, dy: GPUBuffer, dx: GPUBuffer, inDim: number, outDim: number) => {
        const p: GpuLoraPair | undefined = this.adapter.layers[l]?.[m];
        if (!p) return;
        const g = this.grads.get(`${l}.${m}`);
        if (!g) throw new Error(`LoRA backward: no gradient buffers for layer ${l} ${m}`);
        add(await loraBackward(ctx, { x, t: L.t[m], A: p.A, B: p.B, dy, dA: g.dA, dB: g.dB, dt: s.dt, dx, n, inDim, outDim, rank: p.r, scale: p.scale }));
      };
      // MLP: x_out = h + down(silu(gate(n2)) * up(n2)); dX holds d x_out, which is also d h's residual part.
      add(await linearBackward(ctx, W.down, { dy: s.dX, dx: s.dact, n, inDim: I, outDim: H }));
      await lora('down', L.act, s.dX, s.dact, I, H);
      add(await swigluBackward(ctx, { dact: s.dact, gate: L.gate, up: L.up, dgate: s.dgate, dup: s.dup, n, intermediate: I }));
      // dact is dead from here to the next layer's down backward: it lends its [rows, I] as split-K partials
      // (kernels/matmul/matmul.splitk.ts), which spread the long reductions of gate^T and up^T (over I)
      // across more workgroups; shapes with grids deep enough stay one plain dispatch.
      add(await linearBackward(ctx, W.gate, { dy: s.dgate, dx: s.dn, n, inDim: H, outDim: I, partials: s.dact }));
      await lora('gate', L.xn2, s.dgate, s.dn, H, I);
      add(await linearBackward(ctx, W.up, { dy: s.dup, dx: s.dn, n, inDim: H, outDim: I, accumulate: true, partials: s.dact }));
      await lora('up', L.xn2, s.dup, s.dn, H, I);
      add(await rmsnormBackward(ctx, { dy: s.dn, x: L.h, w: W.postNorm, rstd: L.rstd2, dx: s.dX, n, hidden: H, accumulate: true }));
      // Attention: h = x + o(attn); dX now holds d h.
      add(await linearBackward(ctx, W.o, { dy: s.dX, dx: s.datt, n, inDim: qd, outDim: H, partials: s.dact }));
      await lora('o', L.attn, s.dX, s.datt, qd, H);
      add(
        await attentionBackward(ctx, {
          q: L.q, k: L.k, v: L.v, out: L.attn, lse: L.lse, dout: s.datt, ranges: this.plan.ranges, stats: s.attStats,
          dq: s.dq, dk: s.dk, dv: s.dv, n, kvRows: n, nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim, packed: true,
          // dact (N x I) is dead until the next layer's down backward: it holds each query head's dk/dv share
          // (2 * nH * hd per row), which gives the dk/dv pass nH/nKV times the workgroups.
          ...(c.intermediateSize >= 2 * c.numHeads * c.headDim ? { partials: s.dact } : {}),
        }),
      );
      add(await ropeBackward(ctx, { dq: s.dq, dk: s.dk, pos: this.plan.pos, n, nHeads: c.numHeads, nKvHeads: c.numKvHeads, headDim: c.headDim, theta: c.ropeTheta }));
      add(await linearBackward(ctx, W.q, { dy: s.dq, dx: s.dn, n, inDim: H, outDim: qd, partials: s.dact }));
      await lora('q', L.xn1, s.dq, s.dn, H, qd);
      add(await linearBackward(ctx, W.k, { dy: s.dk, dx: s.dn, n, inDim: H, outDim: kvd, accumulate: true, partials: s.dact }));
      await lora('k', L.xn1, s.dk, s.dn, H, kvd);
      add(await linearBackward(ctx, W.v, { dy: s.dv, dx: s.dn, n, inDim: H, outDim: kvd, accumulate: true, partials: s.dact }));
      await lora('v', L.xn1, s.dv, s.dn, H, kvd);
      add(await rmsnormBackward(ctx, { dy: s.dn, x: L.x, w: W.inputNorm, rstd: L.rstd1, dx: s.dX, n, hidden: H, accumulate: true }));
    }
    return { forward, backward: steps };
  }

  private async grpoFor(n: number, p: GrpoLossParams): Promise<Step[]> {
    if ((p.klClamp ?? 10) !== 10) throw new Error(`GPU Flow-GRPO loss: the grpo kernel clamps k3 at 10; klClamp ${p.klClamp} is not supported on the GPU`);
    const key = `${n}|${p.epsLow}/${p.epsHigh}/${p.beta}`;
    let st = this.grpoRecords.get(key);
    if (!st) {
      const i = this.inputs;
      st = [
        dispatchStep(
          await grpoKernel(this.ctx, { logp: this.plan.logprobs, old: i.old, ref: i.ref, advantage: i.adv, weight: i.weight, dlogp: i.dlogp, stats: i.stats, tokens: n, epsLow: p.epsLow, epsHigh: p.epsHigh, beta: p.beta }),
        ),
      ];
      if (this.grpoRecords.size > 16) this.grpoRecords.clear();
      this.grpoRecords.set(key, st);
    }
    return st;
  }

  /**
   * The step lists one micro-batch of b.rows rows runs, over computedRows(b.rows) rows: the forward that
   * keeps activations, and with a loss the grpo kernel and the layer backward (the logits chunks come from
   * chunkForward / chunkBackward). Public for bench/train-profile.ts.
   */
  async stepsFor(b: PackedBatch, loss: GrpoLossParams | null): Promise<{ n: number; forward: Step[]; grpo: Step[]; backward: Step[] }> {
    const n = this.computedRows(b.rows);
    const r = await this.recordsFor(n);
    return { n, forward: r.forward, grpo: loss ? await this.grpoFor(n, loss) : [], backward: loss ? r.backward : [] };
  }

  /** Logits -> logprob and lse of rows [row0, row0 + rows) (row0: the encode input, graph.ts). */
  private async chunkForward(rows: number): Promise<Step[]> {
    let st = this.chunkFwd.get(rows);
    if (!st) {
      st = await recordTargetLogprobs(this.ctx, this.plan, this.weights, ROW0_INPUT, rows);
      this.chunkFwd.set(rows, st);
    }
    return st;
  }

  /** Logits again, dlogits in place per vocab chunk, LM-head backward into dnF rows [row0, row0 + rows). */
  private async chunkBackward(rows: number): Promise<Step[]> {
    let st = this.chunkBwd.get(rows);
    if (st) return st;
    const ctx = this.ctx;
    const w = this.weights;
    const c = w.config;
    const H = c.hiddenSize;
    const V = c.vocabSize;
    const s = this.s;
    const at = (bytesPerRow: number): Offset => (i) => encodeInput(i, 'row0') * bytesPerRow;
    st = await recordLogits(ctx, this.plan, w, ROW0_INPUT, rows);
    st.push(copyStep(this.plan.targets, s.chunkTargets, rows * 4, 0, at(4)));
    st.push(copyStep(this.plan.lse, s.chunkLse, rows * 4, 0, at(4)));
    st.push(copyStep(this.inputs.dlogp, s.chunkDlogp, rows * 4, 0, at(4)));
    for (const ch of w.head) {
      st.push(dispatchStep(await dlogits(ctx, { logits: this.plan.logits, dlogp: s.chunkDlogp, lse: s.chunkLse, targets: s.chunkTargets, rows, vc: ch.rowCount, v0: ch.rowOffset, ld: V, colOffset: ch.rowOffset })));
    }
    for (const [i, ch] of w.head.entries()) {
      const ds = await lmHeadBackward(ctx, ch, { dlogits: this.plan.logits, dx: s.dxChunk, rows, hidden: H, accumulate: i > 0, ld: V, partials: s.headPartials });
      for (const d of ds) st.push(dispatchStep(d));
    }
    st.push(copyStep(s.dxChunk, s.dnF, rows * H * 4, at(H * 4)));
    this.chunkBwd.set(rows, st);
    return st;
  }

  /** Response-row ranges of the batch, split into chunks of at most logitsRows rows. */
  private lossChunks(b: PackedBatch): Array<[number, number]> {
    const C = this.plan.logitsRows;
    const out: Array<[number, number]> = [];
    for (const sq of b.seqs) {
      const first = sq.start + sq.promptLen - 1;
      const end = sq.start + sq.length - 1;
      for (let r = first; r < end; r += C) out.push([r, Math.min(C, end - r)]);
    }
    return out;
  }

  private writeInputs(b: PackedBatch, normalizer: number | null): void {
    const n = this.rows;
    if (b.rows > n) throw new Error(`LoRA backward: a micro-batch of ${b.rows} rows exceeds the ${n} rows this training pass was sized for (is one turn longer than microBatchTokens?)`);
    const pad = <T extends Uint32Array | Float32Array>(a: T, fill = 0): T => {
      const out = new (a.constructor as { new (n: number): T })(n);
      out.set(a);
      if (fill) out.fill(fill as never, a.length);
      return out;
    };
    const ranges = new Uint32Array(2 * n);
    ranges.set(b.ranges);
    for (let r = b.rows; r < n; r++) {
      ranges[2 * r] = r;
      ranges[2 * r + 1] = r + 1;
    }
    writeBuffer(this.ctx, this.plan.ids, pad(b.ids));
    writeBuffer(this.ctx, this.plan.pos, pad(b.pos));
    writeBuffer(this.ctx, this.plan.ranges, ranges);
    writeBuffer(this.ctx, this.plan.targets, pad(b.targets));
    if (normalizer !== null) {
      const weight = new Float32Array(n);
      for (const r of b.lossRows) weight[r] = 1 / normalizer;
      writeBuffer(this.ctx, this.inputs.weight, weight);
      writeBuffer(this.ctx, this.inputs.old, pad(b.oldLogprobs));
      writeBuffer(this.ctx, this.inputs.ref, pad(b.refLogprobs));
      writeBuffer(this.ctx, this.inputs.adv, pad(b.advantages));
    }
  }

  /**
   * Forward with the adapter, and (unless `loss` is null) the GRPO loss and the full backward, adding
   * LoRA gradients into the accumulators. Returns log p(target) per row (response rows only; 0 elsewhere).
   */
  async run(b: PackedBatch, loss: GrpoLossParams | null, normalizer: number): Promise<Float32Array> {
    const st = await this.stepsFor(b, loss);
    const chunks = this.lossChunks(b);
    const fwd = await Promise.all(chunks.map(([, rows]) => this.chunkForward(rows)));
    const bwd = loss ? await Promise.all(chunks.map(([, rows]) => this.chunkBackward(rows))) : [];
    this.writeInputs(b, loss ? normalizer : null);
    const enc = this.ctx.device.createCommandEncoder({ label: 'lora-train' });
    // Rows without logits must read as logp = 0 (with old = ref = 0 and weight 0) so that the grpo kernel
    // sees finite values everywhere.
    enc.clearBuffer(this.plan.logprobs);
    encodeSteps(this.ctx, enc, st.forward);
    chunks.forEach(([r0], i) => encodeSteps(this.ctx, enc, fwd[i], { row0: r0 }));
    if (loss) {
      encodeSteps(this.ctx, enc, st.grpo);
      enc.clearBuffer(this.s.dnF);
      chunks.forEach(([r0], i) => encodeSteps(this.ctx, enc, bwd[i], { row0: r0 }));
      encodeSteps(this.ctx, enc, st.backward);
    }
    this.ctx.device.queue.submit([enc.finish()]);
    return new Float32Array(await readBuffer(this.ctx, this.plan.logprobs, b.rows * 4));
  }

  /**
   * Next-token logits after each context (packed into one forward with the adapter): the rollout policy
   * of small tasks, one submit for a whole group of contexts.
   */
  async lastLogits(contexts: number[][]): Promise<Float32Array[]> {
    const V = this.weights.config.vocabSize;
    const total = contexts.reduce((n, c) => n + c.length, 0);
    if (total > this.rows) throw new Error(`lastLogits: ${total} context tokens exceed the plan's ${this.rows} rows`);
    const tokens: number[] = [];
    const pos: number[] = [];
    const ranges: number[] = [];
    const last: number[] = [];
    for (const [i, c] of contexts.entries()) {
      if (c.length === 0) throw new Error(`lastLogits: context ${i} is empty`);
      const start = tokens.length;
      c.forEach((id, t) => {
        tokens.push(id);
        pos.push(t);
        ranges.push(start, start + t + 1);
      });
      last.push(tokens.length - 1);
    }
    const b = { rows: total, ids: Uint32Array.from(tokens), pos: Uint32Array.from(pos), ranges: Uint32Array.from(ranges), targets: new Uint32Array(total) } as PackedBatch;
    this.writeInputs(b, null);
    if (!this.lastLogitsSteps) this.lastLogitsSteps = await recordLogits(this.ctx, this.plan, this.weights, ROW0_INPUT, 1);
    if (!this.logitsOut || this.logitsOut.size < contexts.length * V * 4) {
      this.logitsOut?.destroy();
      this.logitsOut = await createStorageChecked(this.ctx, 'train.lastLogits', contexts.length * V * 4);
    }
    const forward = (await this.recordsFor(this.computedRows(total))).forward;
    const enc = this.ctx.device.createCommandEncoder({ label: 'last-logits' });
    encodeSteps(this.ctx, enc, forward);
    last.forEach((row, i) => {
      encodeSteps(this.ctx, enc, this.lastLogitsSteps!, { row0: row });
      enc.copyBufferToBuffer(this.plan.logits, 0, this.logitsOut!, i * V * 4, V * 4);
    });
    this.ctx.device.queue.submit([enc.finish()]);
    const all = new Float32Array(await readBuffer(this.ctx, this.logitsOut, contexts.length * V * 4));
    return contexts.map((_, i) => all.subarray(i * V, (i + 1) * V));
  }

  private lastLogitsSteps: Step[] | null = null;
  private logitsOut: GPUBuffer | null = null;

  destroy(): void {
    this.logitsOut?.destroy();
    this.plan?.destroy();
    for (const b of this.owned) b.destroy();
    this.owned.length = 0;
  }
}

/** Zero-filled gradient accumulators for every pair of `adapter`. */
export async function createLoraGrads(ctx: GpuContext, adapter: GpuAdapter): Promise<Map<string, GpuLoraGrad>> {
  const grads = new Map<string, GpuLoraGrad>();
  for (const [l, layer] of adapter.layers.entries()) {
    for (const m of LORA_MODULES) {
      const p = layer[m];
      if (!p) continue;
      grads.set(`${l}.${m}`, {
        dA: await createStorageChecked(ctx, `grad.${l}.${m}.lora_A`, p.r * p.inFeatures * 4),
        dB: await createStorageChecked(ctx, `grad.${l}.${m}.lora_B`, p.outFeatures * p.r * 4),
      });
    }
  }
  return grads;
}
