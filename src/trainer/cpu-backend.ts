// The Flow-GRPO backend in float64 on the CPU, for tiny models (toy mode, loop tests, and the reference
// the GPU backend is compared with). Parameters and moments are f32 like on the GPU.
import type { Qwen2Config } from '../io/qwen2-config';
import type { LoraAdapter } from '../io/peft';
import { adamwUpdate, type AdamWParams } from './adamw-cpu';
import type { Moments, PolicyBackend, TrainableState } from './backend';
import { cpuBackward, cpuForward, zeroLoraGrads, type HostQwen2Weights, type LoraGrads } from './cpu-model';
import { adapterTensors, cloneAdapter } from './lora-init';
import { entropyRowWeights, grpoLoss, addSums, emptySums, type GrpoLossParams, type GrpoLossSums } from '../model/loss';
import type { PackedBatch } from '../model/samples';
import { sampleFromLogits, type TokenPolicy } from './token-policy';

export class CpuPolicyBackend implements PolicyBackend {
  readonly entropyBonus: boolean = true;
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
    // A group's rollouts often repeat a turn exactly (same prompt, same token): one forward serves them all.
    for (const seqs of sameTokens(batch)) {
      const s0 = seqs[0];
      const f = cpuForward(this.modelConfig, this.weights, Array.from(batch.ids.subarray(s0.start, s0.start + s0.length)), adapterOn ? this.adapter : null, s0.promptLen - 1);
      for (const s of seqs) out.set(f.logprobs, s.start);
    }
    return out;
  }

  async accumulate(batch: PackedBatch, loss: GrpoLossParams, normalizer: number): Promise<GrpoLossSums> {
    let sums = emptySums();
    for (const seqs of sameTokens(batch)) {
      const s0 = seqs[0];
      const tokens = Array.from(batch.ids.subarray(s0.start, s0.start + s0.length));
      // Only the response's rows carry loss (the mask is 0 on the prompt), so only they need logits.
      const f = cpuForward(this.modelConfig, this.weights, tokens, this.adapter, s0.promptLen - 1);
      const r = sequencesLoss(batch, seqs, f.logprobs, loss, normalizer);
      sums = addSums(sums, r.sums);
      cpuBackward(this.modelConfig, this.weights, f, r.dlogp, this.adapter, this.grads, r.dEntropy, r.choices);
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

  async exportAdapter(): Promise<LoraAdapter> {
    return cloneAdapter(this.adapter);
  }

  async importAdapter(a: LoraAdapter): Promise<void> {
    const from = new Map(adapterTensors(a).map((t) => [t.name, t.data]));
    const into = adapterTensors(this.adapter);
    // Every tensor is checked before any is written: a bad adapter leaves the trained one whole.
    for (const t of into) {
      const d = from.get(t.name);
      if (!d || d.length !== t.data.length) throw new Error(`importAdapter: tensor '${t.name}' is missing or has another shape than the trained adapter`);
    }
    for (const t of into) t.data.set(from.get(t.name)!);
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
      // A group's G rollouts share their first prompt: each distinct context is run once.
      const logits = new Map<string, Float64Array>();
      return contexts.map((ctx) => {
        const key = ctx.join(',');
        let last = logits.get(key);
        if (!last) {
          const f = cpuForward(backend.modelConfig, backend.weights, ctx, backend.currentAdapter);
          last = f.logits.subarray((ctx.length - 1) * V, ctx.length * V);
          logits.set(key, last);
        }
        return sampleFromLogits(last, temperature, rng);
      });
    },
  };
}

/**
 * The loss of sequences with the same tokens (so the same logprobs `logp`) and its dlogp, summed: the backward is
 * linear in dlogp, so identical sequences share one forward and one backward of their summed token gradients
 * (each keeps its own old logprobs and advantage in the loss). With an entropy bonus, dEntropy (d loss / d H_t)
 * is summed the same way; null without one. With the bonus over choices (entropyOver 'choices'), `choices` holds
 * each row's groups of choices (null on rows without, which get no bonus); null otherwise.
 */
export function sequencesLoss(batch: PackedBatch, seqs: PackedBatch['seqs'], logp: Float64Array, loss: GrpoLossParams, normalizer: number): { dlogp: Float64Array; dEntropy: Float64Array | null; choices: Array<Uint32Array[] | null> | null; sums: GrpoLossSums } {
  const rows = logp.length;
  const dlogp = new Float64Array(rows);
  let dEntropy: Float64Array | null = null;
  // Identical sequences were drawn under the same grammar, so any one of them gives the rows' choice sets.
  const overChoices = loss.entropyOver === 'choices' && (loss.entropyCoef ?? 0) > 0;
  const choices = overChoices ? Array.from({ length: rows }, (_, i) => batch.choices?.get(seqs[0].start + i) ?? null) : null;
  let sums = emptySums();
  for (const s of seqs) {
    const r = grpoLoss(
      {
        logp,
        old: batch.oldLogprobs.subarray(s.start, s.start + rows),
        ref: batch.refLogprobs.subarray(s.start, s.start + rows),
        adv: batch.advantages.subarray(s.start, s.start + rows),
        mask: batch.lossMask.subarray(s.start, s.start + rows),
      },
      loss,
      normalizer,
    );
    for (let i = 0; i < rows; i++) dlogp[i] += r.dlogp[i];
    const e = entropyRowWeights(rows, loss.entropyCoef, normalizer, batch.lossMask.subarray(s.start, s.start + rows));
    if (e && choices) for (let i = 0; i < rows; i++) if (!choices[i]) e[i] = 0;
    if (e && batch.entropyWeights) for (let i = 0; i < rows; i++) e[i] *= batch.entropyWeights[s.start + i];
    if (e) {
      dEntropy ??= new Float64Array(rows);
      for (let i = 0; i < rows; i++) dEntropy[i] += e[i];
    }
    sums = addSums(sums, r.sums);
  }
  return { dlogp, dEntropy, choices, sums };
}

/** The batch's sequences grouped by identical token ids and prompt length (first-seen order). */
export function sameTokens(batch: PackedBatch): Array<PackedBatch['seqs']> {
  const groups = new Map<string, PackedBatch['seqs']>();
  for (const s of batch.seqs) {
    const key = `${s.promptLen}:${batch.ids.subarray(s.start, s.start + s.length).join(',')}`;
    const g = groups.get(key);
    if (g) g.push(s);
    else groups.set(key, [s]);
  }
  return [...groups.values()];
}
