// The Flow-GRPO backend in float64 on the CPU, for tiny models (toy mode, loop tests, and the reference
// the GPU backend is compared with). Parameters and moments are f32 like on the GPU.
import type { Qwen2Config } from '../engine/io/config';
import type { LoraAdapter } from '../engine/io/peft';
import { adamwUpdate, type AdamWParams } from './adamw';
import type { Moments, PolicyBackend, TrainableState } from './backend';
import { cpuBackward, cpuForward, zeroLoraGrads, type HostQwen2Weights, type LoraGrads } from './cpu-model';
import { adapterTensors, cloneAdapter } from './lora';
import { grpoLoss, addSums, emptySums, type GrpoLossParams, type GrpoLossSums } from './loss';
import type { PackedBatch } from './samples';
import { sampleFromLogits, type TokenPolicy } from './toy-task';

export class CpuPolicyBackend implements PolicyBackend {
  private adapter: LoraAdapter;
  private grads: LoraGrads;
  private moments: Moments = new Map();

  constructor(readonly modelConfig: Qwen2Config, readonly weights: HostQwen2Weights, adapter: LoraAdapter) {
    this.adapter = cloneAdapter(adapter);
    this.grads = zeroLoraGrads(this.adapter);
    this.resetMoments();
  }

  private resetMoments(): void {
    this.moments = new Map(adapterTensors(this.adapter).map((t) => [t.name, { m: new Float32Array(t.data.length), v: new Float32Array(t.data.length) }]));
  }

  /** The live adapter (the toy task samples with it). */
  get currentAdapter(): LoraAdapter {
    return this.adapter;
  }

  get gradients(): LoraGrads {
    return this.grads;
  }

  async logprobs(batch: PackedBatch, adapterOn: boolean): Promise<Float32Array> {
    const out = new Float32Array(batch.rows);
    for (const s of batch.seqs) {
      const f = cpuForward(this.modelConfig, this.weights, Array.from(batch.ids.subarray(s.start, s.start + s.length)), adapterOn ? this.adapter : null);
      out.set(f.logprobs, s.start);
    }
    return out;
  }

  async accumulate(batch: PackedBatch, loss: GrpoLossParams, normalizer: number): Promise<GrpoLossSums> {
    let sums = emptySums();
    for (const s of batch.seqs) {
      const tokens = Array.from(batch.ids.subarray(s.start, s.start + s.length));
      const f = cpuForward(this.modelConfig, this.weights, tokens, this.adapter);
      const rows = s.length - 1;
      const r = grpoLoss(
        {
          logp: f.logprobs,
          old: batch.oldLogprobs.subarray(s.start, s.start + rows),
          ref: batch.refLogprobs.subarray(s.start, s.start + rows),
          adv: batch.advantages.subarray(s.start, s.start + rows),
          mask: batch.lossMask.subarray(s.start, s.start + rows),
        },
        loss,
        normalizer,
      );
      cpuBackward(this.modelConfig, this.weights, f, r.dlogp, this.adapter, this.grads);
      sums = addSums(sums, r.sums);
    }
    return sums;
  }

  zeroGrads(): void {
    for (const g of this.grads.values()) {
      g.A.fill(0);
      g.B.fill(0);
    }
  }

  async gradNorm(): Promise<number> {
    let ss = 0;
    for (const g of this.grads.values()) {
      for (const v of g.A) ss += v * v;
      for (const v of g.B) ss += v * v;
    }
    return Math.sqrt(ss);
  }

  async adamw(p: AdamWParams): Promise<void> {
    for (const t of adapterTensors(this.adapter)) {
      const g = this.grads.get(t.key)!;
      const mv = this.moments.get(t.name)!;
      adamwUpdate(t.data, t.which === 'A' ? g.A : g.B, mv.m, mv.v, p);
    }
  }

  async exportState(): Promise<TrainableState> {
    const moments: Moments = new Map();
    for (const [k, v] of this.moments) moments.set(k, { m: Float32Array.from(v.m), v: Float32Array.from(v.v) });
    return { adapter: cloneAdapter(this.adapter), moments };
  }

  async importState(s: TrainableState): Promise<void> {
    this.adapter = cloneAdapter(s.adapter);
    this.grads = zeroLoraGrads(this.adapter);
    this.resetMoments();
    for (const [name, mv] of s.moments) {
      const dst = this.moments.get(name);
      if (!dst || dst.m.length !== mv.m.length) throw new Error(`checkpoint moments: tensor '${name}' does not match the adapter`);
      dst.m.set(mv.m);
      dst.v.set(mv.v);
    }
  }
}

/** Samples with the backend's live adapter, by a full float64 forward per context (tiny models only). */
export function cpuTokenPolicy(backend: CpuPolicyBackend): TokenPolicy {
  return {
    async sampleNext(contexts, temperature, rng) {
      const V = backend.modelConfig.vocabSize;
      return contexts.map((ctx) => {
        const f = cpuForward(backend.modelConfig, backend.weights, ctx, backend.currentAdapter);
        return sampleFromLogits(f.logits.subarray((ctx.length - 1) * V, ctx.length * V), temperature, rng);
      });
    },
  };
}
