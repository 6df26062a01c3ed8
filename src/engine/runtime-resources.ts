// What the runtime's calls share on the GPU and when each is made, grown or dropped: the two activation
// plans (scoring / prefill rows, decode rows), a sampler over each, the KV cache and what it holds, the
// draw log, and the step lists recorded over them. Calls are serialised by the runtime, so
// one set serves them all.
import { createStorage } from '../gpu/buffers';
import type { GpuContext } from '../gpu/device';
import { DRAW_LOG_WORDS } from '../kernels/sampling/sampling';
import { GpuSampler } from './gpu-sampler';
import { ActivationPlan } from '../model/activations';
import type { AdapterSet, GpuAdapter } from '../model/adapters';
import { canFuseDecode } from '../model/decode-forward';
import type { Qwen2Config } from '../io/qwen2-config';
import { KvCache } from '../model/kv-cache';
import { GENERAL_DECODE_ROWS, MAX_DECODE_ROWS, type RuntimeLimits } from './runtime-options';
import { StepRecords } from './step-records';
import type { Qwen2Weights } from '../model/weights';

export class RuntimeResources {
  readonly records: StepRecords;
  private batchPlan: ActivationPlan | null = null;
  private decodePlan: ActivationPlan | null = null;
  private kv: KvCache | null = null;
  /**
   * What the KV cache's first rows hold: K/V of `tokens` at positions 0.., computed with `adapter` at
   * `version` (null adapter: the base model). Null while a generate is writing the cache or after one failed.
   */
  kvHolds: { tokens: number[]; adapter: GpuAdapter | null; version: number } | null = null;
  private samplers = new Map<ActivationPlan, GpuSampler>();
  /** Where GPU draws log each generated token (DRAW_LOG_WORDS u32 per token): see drawLogBuffer. */
  private drawLog: GPUBuffer | null = null;
  /** See fusedDecode. */
  private fusedDecodeMemo: boolean | null = null;
  /** See Qwen2Runtime.decodeCounters. */
  readonly decodeCounters = { steps: 0, rows: 0, padRows: 0 };

  constructor(
    readonly ctx: GpuContext,
    readonly config: Qwen2Config,
    readonly weights: Qwen2Weights,
    readonly adapters: AdapterSet,
    readonly limits: RuntimeLimits,
  ) {
    this.records = new StepRecords(adapters);
  }

  /** Whether decode runs the fused 4-bit kernels (decided once: the weights never change). */
  get fusedDecode(): boolean {
    return (this.fusedDecodeMemo ??= canFuseDecode(this.weights));
  }

  /** See Qwen2Runtime.maxDecodeRows. */
  get maxDecodeRows(): number {
    return this.fusedDecode ? MAX_DECODE_ROWS : GENERAL_DECODE_ROWS;
  }

  /** Rows of the current scoring / prefill activation plan (0 before the first call). */
  get batchRows(): number {
    return this.batchPlan?.rows ?? 0;
  }

  /** Bytes of the plans and the draw log (the activations memory() reports, with the batch host's). */
  get activationBytes(): number {
    return (this.batchPlan?.bytes ?? 0) + (this.decodePlan?.bytes ?? 0) + (this.drawLog?.size ?? 0);
  }

  get kvBytes(): number {
    return this.kv?.bytes ?? 0;
  }

  /** The scoring / prefill plan or the decode plan, with at least `rows` rows (a smaller one is replaced). */
  async plan(kind: 'batch' | 'decode', rows: number): Promise<ActivationPlan> {
    const cur = kind === 'batch' ? this.batchPlan : this.decodePlan;
    if (cur && cur.rows >= rows) return cur;
    if (cur) {
      this.samplers.get(cur)?.destroy();
      this.samplers.delete(cur);
      cur.destroy();
      this.records.clear();
    }
    // A decode plan computes the logits of every row it runs (one per sequence of a batch).
    const plan = await ActivationPlan.create(this.ctx, this.config, { rows, loraRank: this.adapters.maxRank(), logitsRows: kind === 'batch' ? this.limits.logitsRows : rows });
    if (kind === 'batch') this.batchPlan = plan;
    else this.decodePlan = plan;
    return plan;
  }

  /**
   * The sampler over a plan's logits (made once per plan): the CPU rule reads the first row; on the decode
   * plan GPU draws take all its rows (generateBatch's sequences).
   */
  async sampler(plan: ActivationPlan): Promise<GpuSampler> {
    let s = this.samplers.get(plan);
    if (!s) {
      const rows = plan === this.decodePlan ? plan.rows : 1;
      s = await GpuSampler.create(this.ctx, { logits: plan.logits, vocab: this.config.vocabSize, rows });
      this.samplers.set(plan, s);
    }
    return s;
  }

  /** The KV cache, with at least `rows` rows (grown for a batch up to batchContext; its contents then go). */
  async kvCache(rows = this.limits.maxContext): Promise<KvCache> {
    if (this.kv && this.kv.maxCtx < rows) {
      this.kv.destroy();
      this.kv = null;
      this.kvHolds = null;
      // Recorded steps bind the old cache's buffers.
      this.records.clear();
    }
    this.kv ??= await KvCache.create(this.ctx, this.config, rows);
    return this.kv;
  }

  /**
   * The draw log, sized for `rows` entries at every position of the context (grown for a batch, kept
   * across calls).
   */
  drawLogBuffer(rows: number): GPUBuffer {
    const bytes = this.limits.maxContext * rows * DRAW_LOG_WORDS * 4;
    if (this.drawLog && this.drawLog.size < bytes) {
      this.drawLog.destroy();
      this.drawLog = null;
    }
    this.drawLog ??= createStorage(this.ctx, 'runtime.drawLog', bytes);
    return this.drawLog;
  }

  /** Prompt tokens at the front whose K/V the cache already holds for the active adapter's current weights. */
  reusablePrefix(prompt: number[]): number {
    const held = this.kvHolds;
    const active = this.adapters.active;
    if (!held || held.adapter !== active || held.version !== (active?.version ?? 0)) return 0;
    let n = 0;
    const max = Math.min(held.tokens.length, prompt.length - 1); // the last prompt token runs, for its logits
    while (n < max && held.tokens[n] === prompt[n]) n++;
    return n;
  }

  countDecode(rows: number, padRows = 0): void {
    this.decodeCounters.steps++;
    this.decodeCounters.rows += rows;
    this.decodeCounters.padRows += padRows;
  }

  /** Drops the plans, their samplers and every record (a larger LoRA rank needs wider plans). */
  dropPlans(): void {
    for (const s of this.samplers.values()) s.destroy();
    this.samplers.clear();
    this.batchPlan?.destroy();
    this.decodePlan?.destroy();
    this.batchPlan = this.decodePlan = null;
    this.records.clear();
  }

  destroy(): void {
    this.dropPlans();
    this.drawLog?.destroy();
    this.drawLog = null;
    this.kv?.destroy();
    this.kv = null;
    this.kvHolds = null;
  }
}
