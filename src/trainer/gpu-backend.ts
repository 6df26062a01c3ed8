// The Flow-GRPO backend on the GPU: scoring through the engine runtime (adapter on, or off for the
// reference policy), forward+backward through LoraBackwardPass, global gradient norm with the reduce
// kernel, and AdamW with the adamw kernel, updating the adapter's A/B buffers in place (the runtime
// samples with them right away: no re-upload between steps).
import type { GpuContext } from '../gpu/device';
import { createStorageChecked, readBuffer, writeBuffer } from '../gpu/buffers';
import { submitDispatches, type Dispatch } from '../gpu/pipelines';
import type { GpuAdapter } from '../model/adapters';
import { LORA_MODULES, loraKey, type LoraAdapter, type LoraPair } from '../io/peft';
import { defaultLogitsRows, type Qwen2Runtime } from '../engine/runtime';
import { ADAMW_HYPER_BYTES, adamw as adamwKernel, writeAdamwHyper } from '../kernels/adamw/adamw';
import { sumOfSquares } from '../kernels/reduce/reduce';
import type { AdamWParams } from './adamw-cpu';
import type { Moments, PolicyBackend, TrainableState } from './backend';
import { LoraBackwardPass, createLoraGrads, type GpuLoraGrad } from '../model/backward';
import { peftName } from './lora-init';
import { grpoLoss, type GrpoLossParams, type GrpoLossSums } from '../model/loss';
import type { PackedBatch } from '../model/samples';
import { sampleFromLogits, type TokenPolicy } from './token-policy';

export interface GpuBackendOptions {
  /** Id of the trained adapter in the runtime's AdapterSet. */
  adapterId?: string;
  /** Largest micro-batch in rows (the trainer's microBatchTokens). */
  maxRows: number;
  /** Rows of logits per chunk (memory: logitsRows × vocab × 4 bytes); default defaultLogitsRows (engine/runtime-options.ts). */
  logitsRows?: number;
}

interface Tensor {
  name: string;
  key: string;
  which: 'A' | 'B';
  param: GPUBuffer;
  grad: GPUBuffer;
  m: GPUBuffer;
  v: GPUBuffer;
  count: number;
}

export class GpuPolicyBackend implements PolicyBackend {
  private tensors: Tensor[] = [];
  private readonly owned: GPUBuffer[] = [];
  private normSteps: Dispatch[] = [];
  private adamSteps: Dispatch[] = [];
  private partials!: GPUBuffer;
  private normOut!: GPUBuffer;
  private clip!: GPUBuffer;
  private hyper!: GPUBuffer;

  private constructor(
    readonly runtime: Qwen2Runtime,
    readonly adapterId: string,
    private gpuAdapter: GpuAdapter,
    private source: LoraAdapter,
    private grads: Map<string, GpuLoraGrad>,
    private pass: LoraBackwardPass,
  ) {}

  get maxRows(): number {
    return this.pass.rows;
  }

  get modelConfig() {
    return this.runtime.config;
  }

  private get ctx(): GpuContext {
    return this.runtime.ctx;
  }

  static async create(runtime: Qwen2Runtime, adapter: LoraAdapter, o: GpuBackendOptions): Promise<GpuPolicyBackend> {
    const id = o.adapterId ?? 'training';
    const gpuAdapter = await runtime.addAdapter(id, adapter);
    runtime.setActiveAdapter(id);
    const grads = await createLoraGrads(runtime.ctx, gpuAdapter);
    const pass = await LoraBackwardPass.create(runtime.ctx, runtime.weights, gpuAdapter, grads, o.maxRows, o.logitsRows ?? defaultLogitsRows(runtime.ctx.caps));
    const b = new GpuPolicyBackend(runtime, id, gpuAdapter, adapter, grads, pass);
    await b.setup();
    return b;
  }

  private async buf(label: string, bytes: number): Promise<GPUBuffer> {
    const b = await createStorageChecked(this.ctx, label, bytes);
    this.owned.push(b);
    return b;
  }

  private async setup(): Promise<void> {
    const ctx = this.ctx;
    this.tensors = [];
    for (const [l, layer] of this.gpuAdapter.layers.entries()) {
      for (const m of LORA_MODULES) {
        const p = layer[m];
        if (!p) continue;
        const key = loraKey(l, m);
        const g = this.grads.get(key)!;
        for (const which of ['A', 'B'] as const) {
          const count = which === 'A' ? p.r * p.inFeatures : p.outFeatures * p.r;
          const name = peftName({ layer: l, module: m }, which);
          this.tensors.push({ name, key, which, param: which === 'A' ? p.A : p.B, grad: which === 'A' ? g.dA : g.dB, m: await this.buf(`${name}.exp_avg`, count * 4), v: await this.buf(`${name}.exp_avg_sq`, count * 4), count });
        }
      }
    }
    this.partials = await this.buf('gradnorm.partials', this.tensors.length * 4);
    this.normOut = await this.buf('gradnorm.out', 16);
    this.clip = await this.buf('adamw.clip', 16);
    this.hyper = await this.buf('adamw.hyper', ADAMW_HYPER_BYTES);
    this.normSteps = await sumOfSquares(ctx, { inputs: this.tensors.map((t) => ({ buffer: t.grad, count: t.count })), partials: this.partials, out: this.normOut });
    this.adamSteps = [];
    for (const t of this.tensors) {
      this.adamSteps.push(await adamwKernel(ctx, { p: t.param, g: t.grad, m: t.m, v: t.v, clip: this.clip, scaleIndex: 0, hyper: this.hyper, count: t.count }));
    }
    this.zeroGrads();
  }

  async logprobs(batch: PackedBatch, adapterOn: boolean): Promise<Float32Array> {
    const seqs = batch.seqs.map((s) => Array.from(batch.ids.subarray(s.start, s.start + s.length)));
    const prev = this.runtime.activeAdapterId;
    this.runtime.setActiveAdapter(adapterOn ? this.adapterId : null);
    try {
      // The trainer reads each turn's response entries only (from promptLen - 1): skipping the prompt rows'
      // LM head saves most of the reference pass's logit work (4 of 5 rows are prompt in the bench's turns).
      const lp = await this.runtime.score(seqs, { from: batch.seqs.map((s) => Math.max(0, s.promptLen - 1)) });
      const out = new Float32Array(batch.rows);
      batch.seqs.forEach((s, i) => out.set(lp[i], s.start));
      return out;
    } finally {
      this.runtime.setActiveAdapter(prev);
    }
  }

  async accumulate(batch: PackedBatch, loss: GrpoLossParams, normalizer: number): Promise<GrpoLossSums> {
    const lp = await this.pass.run(batch, loss, normalizer);
    // Statistics from the same logprobs the kernel used (the loss itself is the kernel's; this is its f64 twin).
    return grpoLoss({ logp: lp, old: batch.oldLogprobs, ref: batch.refLogprobs, adv: batch.advantages, mask: batch.lossMask }, loss, normalizer).sums;
  }

  zeroGrads(): void {
    const enc = this.ctx.device.createCommandEncoder({ label: 'zero-grads' });
    for (const t of this.tensors) enc.clearBuffer(t.grad);
    this.ctx.device.queue.submit([enc.finish()]);
  }

  async gradNorm(): Promise<number> {
    submitDispatches(this.ctx, this.normSteps, 'grad-norm');
    const out = new Float32Array(await readBuffer(this.ctx, this.normOut, 12));
    // out[1] is sqrt(max(total, 0)), and WGSL's max may return 0 for a NaN total: NaN gradients would read
    // as a zero norm and reach AdamW. The sum of squares itself keeps the NaN (or overflows to infinity).
    return Number.isFinite(out[0]) ? out[1] : out[0];
  }

  async adamw(p: AdamWParams): Promise<void> {
    writeBuffer(this.ctx, this.clip, new Float32Array([p.gradScale, 0, 0, 0]));
    writeAdamwHyper(this.ctx, this.hyper, { lr: p.lr, beta1: p.beta1, beta2: p.beta2, eps: p.eps, weightDecay: p.weightDecay }, p.step);
    submitDispatches(this.ctx, this.adamSteps, 'adamw');
    // The adapter's weights changed under the runtime: its cached KV prefix is stale.
    this.gpuAdapter.version++;
  }

  /** Next-token logits after each context with the trained adapter (batched; contexts must fit maxRows). */
  nextTokenLogits(contexts: number[][]): Promise<Float32Array[]> {
    return this.pass.lastLogits(contexts);
  }

  /** The gradient accumulators as host arrays keyed by PEFT name (tests, the grpo-grad CLI). */
  async readGradients(): Promise<Map<string, Float32Array>> {
    const out = new Map<string, Float32Array>();
    for (const t of this.tensors) out.set(t.name, new Float32Array(await readBuffer(this.ctx, t.grad, t.count * 4)));
    return out;
  }

  async exportState(): Promise<TrainableState> {
    const adapter = await this.exportAdapter();
    const moments: Moments = new Map();
    for (const t of this.tensors) {
      moments.set(t.name, { m: new Float32Array(await readBuffer(this.ctx, t.m, t.count * 4)), v: new Float32Array(await readBuffer(this.ctx, t.v, t.count * 4)) });
    }
    return { adapter, moments };
  }

  async exportAdapter(): Promise<LoraAdapter> {
    const pairs = new Map<string, LoraPair>();
    for (const t of this.tensors) {
      const src = this.source.pairs.get(t.key)!;
      const pair = pairs.get(t.key) ?? { ...src };
      pair[t.which] = new Float32Array(await readBuffer(this.ctx, t.param, t.count * 4));
      pairs.set(t.key, pair);
    }
    return { config: { ...this.source.config }, pairs };
  }

  /** Throws, naming the tensor, unless `a` has every trained tensor at its shape (`what` says whose it is). */
  private checkAdapter(a: LoraAdapter, what: string): void {
    for (const t of this.tensors) {
      const p = a.pairs.get(t.key);
      if (!p || p[t.which].length !== t.count) throw new Error(`${what}: tensor '${t.name}' is missing or has another shape than the trained adapter`);
    }
  }

  private writeAdapter(a: LoraAdapter): void {
    for (const t of this.tensors) writeBuffer(this.ctx, t.param, a.pairs.get(t.key)![t.which]);
    // As after AdamW: a KV prefix cached with the old weights is stale.
    this.gpuAdapter.version++;
  }

  async importAdapter(a: LoraAdapter): Promise<void> {
    // Every tensor is checked before any is written: a bad adapter leaves the trained one whole.
    this.checkAdapter(a, 'importAdapter');
    this.writeAdapter(a);
  }

  async importState(s: TrainableState): Promise<void> {
    // Every tensor is checked before any is written: a bad checkpoint leaves the trained state whole.
    this.checkAdapter(s.adapter, 'checkpoint adapter');
    for (const t of this.tensors) {
      const mv = s.moments.get(t.name);
      if (mv && (mv.m.length !== t.count || mv.v.length !== t.count)) throw new Error(`checkpoint moments: tensor '${t.name}' has another shape than the trained adapter`);
    }
    this.writeAdapter(s.adapter);
    for (const t of this.tensors) {
      const mv = s.moments.get(t.name);
      writeBuffer(this.ctx, t.m, mv ? mv.m : new Float32Array(t.count));
      writeBuffer(this.ctx, t.v, mv ? mv.v : new Float32Array(t.count));
    }
    this.source = { config: { ...s.adapter.config }, pairs: new Map([...s.adapter.pairs].map(([k, p]) => [k, { ...p }])) };
  }

  destroy(): void {
    this.pass.destroy();
    for (const b of this.owned) b.destroy();
    for (const g of this.grads.values()) {
      g.dA.destroy();
      g.dB.destroy();
    }
    this.runtime.adapters.remove(this.adapterId);
  }
}

/** Samples the next token of many contexts at once with the backend's live adapter (toy task rollouts). */
export function gpuTokenPolicy(backend: GpuPolicyBackend): TokenPolicy {
  return {
    async sampleNext(contexts, temperature, rng) {
      const out: Array<{ token: number; logprob: number }> = [];
      // Split so each packed forward fits the backward plan's rows.
      let i = 0;
      while (i < contexts.length) {
        const part: number[][] = [];
        let rows = 0;
        while (i < contexts.length && (part.length === 0 || rows + contexts[i].length <= backend.maxRows)) {
          rows += contexts[i].length;
          part.push(contexts[i++]);
        }
        for (const logits of await backend.nextTokenLogits(part)) out.push(sampleFromLogits(logits, temperature, rng));
      }
      return out;
    },
  };
}
