// The GPU sampler: the owner of the sampling kernels' scratch (candidate ping-pong buffers, log-sum-exp
// stats, the draw-step entries, the read-back area), which the engine creates per plan. The kernels it
// dispatches (top-k passes, log-sum-exp chunks, the GPU draw) live in kernels/, which allocates nothing.
import type { GpuContext } from '../gpu/device';
import { createStorage, readBuffer, readF32, writeBuffer } from '../gpu/buffers';
import { encodeDispatch, type Dispatch } from '../gpu/pipelines';
import type { Rng } from '../util/rng';
import { checkDims } from '../kernels/common/params';
import { lseChunk } from '../kernels/logits/logits';
import { TOPK_MAX_K, TOPK_NONE, TOPK_SLICE } from '../kernels/sampling/sampling.wgsl';
import { DRAW_ANY_PLAN, DRAW_ENTRY_WORDS } from '../kernels/sampling/gpu-draw.wgsl';
import {
  candidateDistribution,
  checkSamplingOptions,
  drawTail,
  isPureTemperature,
  logSumExp,
  pickFromPrefix,
  pickIndex,
  sortRow,
  type SampleResult,
  type SamplingOptions,
} from '../kernels/sampling/draw';
import { gpuDraw, gpuDrawServes, topkPass, type DrawTarget } from '../kernels/sampling/sampling';

/** Slice counts of the successive passes until one workgroup holds the final k. */
function passCounts(vocab: number, k: number): number[] {
  const counts = [vocab];
  while (Math.ceil(counts[counts.length - 1] / TOPK_SLICE) > 1) counts.push(Math.ceil(counts[counts.length - 1] / TOPK_SLICE) * k);
  return counts;
}

export interface SamplerArgs {
  /**
   * f32 [rows, V]: the logits rows to sample from (rewritten by the engine before each sample() call).
   * The CPU rule (gather, sample, ...) reads row 0; GPU draws take rows 0..n-1.
   */
  logits: GPUBuffer;
  vocab: number;
  /** Rows a GPU draw may take at once (default 1): the sequences of a decode step. */
  rows?: number;
  /** Largest candidate set extracted on the GPU (<= 64, default 64). */
  maxK?: number;
}

/**
 * Samples a token from one row of logits. The GPU does the O(V) work: top-k candidates (sorted, ties to
 * the lowest id) and the log-sum-exp at temperature 1 and T. The CPU reads back <= 64 candidates and two
 * numbers and draws with the caller's seeded Rng. Only when the candidates cannot determine the
 * distribution (no top-k and the top-p nucleus is wider than 64 tokens, top-k > 64, or pure temperature
 * sampling) is the whole row read back and the same CPU code run over it.
 * A GPU draw (drawPlan) does all of it on the GPU for up to `rows` rows in one set of dispatches.
 * Owns small scratch buffers: call destroy() when done.
 */
export class GpuSampler {
  private readonly plans = new Map<string, { dispatches: Dispatch[]; vals: GPUBuffer; ids: GPUBuffer }>();
  private readonly lsePlans = new Map<string, Dispatch[]>();
  private readonly scratch: GPUBuffer[];
  private readonly stats1: GPUBuffer;
  private readonly packed: GPUBuffer;
  private readonly statsT: GPUBuffer;
  /** [rows, DRAW_ENTRY_WORDS]: each row's [u f32 bits, log index, plan] for the next GPU draw (setDraws). */
  private readonly step: GPUBuffer;
  private readonly drawPlans = new Map<string, { target: DrawTarget; dispatches: Dispatch[] }>();
  /** Each set of sampling options' plan id (what a row's draw entry names), kept for the sampler's life. */
  private readonly planIds = new Map<string, number>();
  private readonly maxK: number;

  private constructor(
    private readonly ctx: GpuContext,
    private readonly logits: GPUBuffer,
    readonly vocab: number,
    readonly rows: number,
    maxK: number,
  ) {
    this.maxK = maxK;
    const counts = passCounts(vocab, maxK);
    // Two ping-pong candidate buffer pairs sized for the largest pass output (the first), per row.
    const first = Math.ceil(vocab / TOPK_SLICE) * maxK * rows;
    const second = Math.max(counts.length > 2 ? counts[2] : maxK, maxK) * rows;
    this.scratch = [
      createStorage(ctx, 'sampler.candVals0', first * 4),
      createStorage(ctx, 'sampler.candIds0', first * 4),
      createStorage(ctx, 'sampler.candVals1', second * 4),
      createStorage(ctx, 'sampler.candIds1', second * 4),
    ];
    this.stats1 = createStorage(ctx, 'sampler.stats1', 12 * rows);
    this.packed = createStorage(ctx, 'sampler.readback', 24 + 8 * maxK);
    this.statsT = createStorage(ctx, 'sampler.statsT', 12 * rows);
    this.step = createStorage(ctx, 'sampler.drawStep', DRAW_ENTRY_WORDS * 4 * rows);
  }

  static async create(ctx: GpuContext, a: SamplerArgs): Promise<GpuSampler> {
    const maxK = a.maxK ?? TOPK_MAX_K;
    const rows = a.rows ?? 1;
    checkDims('GpuSampler', { vocab: a.vocab, maxK, rows });
    if (maxK > TOPK_MAX_K) throw new Error(`GpuSampler: maxK ${maxK} exceeds ${TOPK_MAX_K}`);
    if (a.logits.size < rows * a.vocab * 4) throw new Error(`GpuSampler: logits buffer of ${a.logits.size} bytes holds fewer than rows ${rows} x vocab ${a.vocab} f32`);
    return new GpuSampler(ctx, a.logits, a.vocab, rows, maxK);
  }

  /** The top-k passes over rows 0..n-1, ending with each row's k sorted candidates at [row * k]. */
  private async plan(k: number, n = 1) {
    const key = `${k}|${n}`;
    const hit = this.plans.get(key);
    if (hit) return hit;
    const counts = passCounts(this.vocab, k);
    const dispatches: Dispatch[] = [];
    let inVals = this.logits;
    let inIds: GPUBuffer | undefined;
    let ld = this.vocab;
    let out = 0;
    for (const count of counts) {
      const [vals, ids] = [this.scratch[2 * out], this.scratch[2 * out + 1]];
      dispatches.push(await topkPass(this.ctx, { values: inVals, ids: inIds, outValues: vals, outIds: ids, count, k, rows: n, ld }));
      inVals = vals;
      inIds = ids;
      ld = Math.ceil(count / TOPK_SLICE) * k;
      out ^= 1;
    }
    const p = { dispatches, vals: inVals, ids: inIds! };
    this.plans.set(key, p);
    return p;
  }

  /** Log-sum-exps of rows 0..n-1 at temperature 1 (stats1) and T (statsT). */
  private async lsePlan(temperature: number, n = 1): Promise<Dispatch[]> {
    // Cached per temperature: building a dispatch allocates its uniform, and this runs every token.
    const key = `${temperature}|${n}`;
    let ds = this.lsePlans.get(key);
    if (!ds) {
      ds = [await lseChunk(this.ctx, { logits: this.logits, stats: this.stats1, rows: n, cols: this.vocab, ld: this.vocab, first: true })];
      if (temperature !== 1) {
        ds.push(await lseChunk(this.ctx, { logits: this.logits, stats: this.statsT, rows: n, cols: this.vocab, ld: this.vocab, first: true, scale: 1 / temperature }));
      }
      if (this.lsePlans.size > 32) this.lsePlans.clear();
      this.lsePlans.set(key, ds);
    }
    return ds;
  }

  /**
   * One submission: log-sum-exps at temperature 1 and T, the top-k passes, and copies of the results
   * into one small buffer, read back with a single map (a per-token round trip is the cost that matters).
   */
  async gather(k: number, temperature: number): Promise<{ values: Float32Array; ids: Uint32Array; lse1: number; lseT: number }> {
    if (!(k >= 1 && k <= this.maxK)) throw new Error(`GpuSampler: k must be in [1, ${this.maxK}], got ${k}`);
    const T = temperature > 0 ? temperature : 1;
    const p = await this.plan(k, 1);
    const dispatches = [...(await this.lsePlan(T, 1)), ...p.dispatches];
    const enc = this.ctx.device.createCommandEncoder({ label: 'sampler' });
    for (const d of dispatches) encodeDispatch(this.ctx, enc, d);
    enc.copyBufferToBuffer(this.stats1, 0, this.packed, 0, 12);
    if (T !== 1) enc.copyBufferToBuffer(this.statsT, 0, this.packed, 12, 12);
    else enc.copyBufferToBuffer(this.stats1, 0, this.packed, 12, 12);
    enc.copyBufferToBuffer(p.vals, 0, this.packed, 24, k * 4);
    enc.copyBufferToBuffer(p.ids, 0, this.packed, 24 + k * 4, k * 4);
    this.ctx.device.queue.submit([enc.finish()]);
    const raw = await readBuffer(this.ctx, this.packed, 24 + 8 * k);
    const f = new Float32Array(raw);
    let values = f.slice(6, 6 + k);
    let ids = new Uint32Array(raw, 24 + 4 * k, k).slice();
    const n = ids.findIndex((id) => id === TOPK_NONE);
    if (n >= 0) {
      values = values.slice(0, n);
      ids = ids.slice(0, n);
    }
    return { values, ids, lse1: f[0] + Math.log(f[1]), lseT: f[3] + Math.log(f[4]) };
  }

  /** The k (<= maxK) most likely tokens of the current row, sorted (value desc, id asc). */
  async candidates(k: number): Promise<{ values: Float32Array; ids: Uint32Array }> {
    const { values, ids } = await this.gather(k, 1);
    return { values, ids };
  }

  /** The distribution sample() draws from, as (ids, probs); reads the whole row only when it must. */
  async distribution(o: SamplingOptions): Promise<{ ids: number[]; probs: number[]; lse1: number; usedFullRow: boolean; logitOf: (id: number) => number }> {
    checkSamplingOptions(o);
    const T = o.temperature ?? 0;
    if (T === 0) {
      const c = await this.gather(1, 1);
      return { ids: [c.ids[0]], probs: [1], lse1: c.lse1, usedFullRow: false, logitOf: () => c.values[0] };
    }
    const k = o.topK && o.topK <= this.maxK ? o.topK : this.maxK;
    const c = await this.gather(Math.min(k, this.vocab), T);
    const lse1 = c.lse1;
    const d = candidateDistribution(c.values, c.ids, c.lseT, this.vocab, o);
    if (d) {
      const byId = new Map(Array.from(c.ids, (id, i) => [id, c.values[i]] as const));
      return { ...d, lse1, usedFullRow: false, logitOf: (id) => byId.get(id)! };
    }
    const row = await readF32(this.ctx, this.logits, this.vocab);
    const sorted = sortRow(row);
    const full = candidateDistribution(sorted.values, sorted.ids, logSumExp(row, 1 / T), this.vocab, o)!;
    return { ...full, lse1, usedFullRow: true, logitOf: (id) => row[id] };
  }

  /**
   * Samples one token; see SampleResult for which log-probabilities are returned. rng: needed unless greedy,
   * which draws exactly one uniform per token at temperature > 0 (the GPU draw consumes the same stream).
   */
  async sample(o: SamplingOptions, rng?: Rng): Promise<SampleResult> {
    if ((o.temperature ?? 0) > 0 && !rng) throw new Error('GpuSampler.sample: a seeded Rng is required for temperature > 0');
    return this.sampleWithU(o, (o.temperature ?? 0) > 0 ? rng!.next() : 0);
  }

  /**
   * The CPU rule of sampling with the uniform `u` in [0, 1): inverse CDF over the sorted distribution of
   * candidateDistribution. Pure temperature: over the sorted candidates while u is within their mass
   * (pickFromPrefix), and past it the tail draw over the rest of the row in float64 (drawTail: a linear
   * pass, no sort). The GPU draw follows the same rule.
   */
  async sampleWithU(o: SamplingOptions, u: number): Promise<SampleResult> {
    checkSamplingOptions(o);
    const T = o.temperature ?? 0;
    if (T > 0 && isPureTemperature(o, this.vocab)) {
      const c = await this.gather(Math.min(this.maxK, this.vocab), T);
      const hit = pickFromPrefix(c.values, c.lseT, T, u);
      if (hit) return { token: c.ids[hit.index], logprob: c.values[hit.index] - c.lse1, sampleLogprob: Math.log(hit.prob) };
      const L = c.ids.length;
      // Fewer candidates than the vocabulary: the tail decides (else u is past 1 by rounding only).
      if (L === this.maxK && L < this.vocab) {
        const row = await readF32(this.ctx, this.logits, this.vocab);
        const token = drawTail(row, T, { value: c.values[L - 1], id: c.ids[L - 1] }, u) ?? c.ids[L - 1];
        return { token, logprob: row[token] - c.lse1, sampleLogprob: row[token] / T - c.lseT };
      }
    }
    const d = await this.distribution(o);
    const i = d.probs.length === 1 ? 0 : pickIndex(d.probs, u);
    const token = d.ids[i];
    return { token, logprob: d.logitOf(token) - d.lse1, sampleLogprob: Math.log(d.probs[i]) };
  }

  /**
   * The dispatches of one GPU draw from row 0: see drawPlan. The row's entry is set by setDraw().
   */
  async drawDispatches(o: SamplingOptions, out: DrawTarget): Promise<Dispatch[]> {
    return (await this.drawPlan(o, out, 1)).dispatches;
  }

  /**
   * One GPU draw for rows 0..rows-1 under options `o`: log-sum-exps, top-k passes and the draw itself,
   * which writes row r's token to `out.ids[r]` and a log entry at the index its setDraws() entry gives.
   * The draw takes only the rows whose entry names `plan` (or any plan): rows with other options are
   * drawn by their own plan's dispatches, encoded after these (the lse and top-k scratch is shared, so
   * plans run one after the other). Nothing is read back, so a decode loop can encode the next step right
   * after. For options gpuDrawServes() accepts.
   */
  async drawPlan(o: SamplingOptions, out: DrawTarget, rows: number): Promise<{ plan: number; dispatches: Dispatch[] }> {
    checkSamplingOptions(o);
    if (!gpuDrawServes(o, this.vocab, this.maxK)) throw new Error(`GpuSampler: the GPU draw takes topK <= ${this.maxK} (or 0), got ${o.topK}`);
    if (!Number.isInteger(rows) || rows < 1 || rows > this.rows) throw new Error(`GpuSampler.drawPlan: rows must be an integer in [1, ${this.rows}], got ${rows}`);
    if (out.ids.size < rows * 4) throw new Error(`GpuSampler.drawPlan: the ids buffer holds ${out.ids.size / 4} ids, fewer than rows ${rows}`);
    const T = o.temperature ?? 0;
    const greedy = T === 0;
    const topK = !o.topK || o.topK >= this.vocab ? 0 : o.topK;
    const k = Math.min(greedy ? 1 : topK || this.maxK, this.vocab);
    const options = `${k}|${T}|${topK}|${o.topP ?? 1}`;
    let plan = this.planIds.get(options);
    if (plan === undefined) this.planIds.set(options, (plan = this.planIds.size));
    const key = `${options}|${rows}`;
    const hit = this.drawPlans.get(key);
    // A plan writes to the target it was built for; another target replaces it.
    if (hit && hit.target.ids === out.ids && hit.target.log === out.log) return { plan, dispatches: hit.dispatches };
    const p = await this.plan(k, rows);
    const Tg = greedy ? 1 : T;
    const lse = await this.lsePlan(Tg, rows);
    const draw = await gpuDraw(this.ctx, {
      values: p.vals, ids: p.ids, stats1: this.stats1, statsT: Tg !== 1 ? this.statsT : this.stats1, step: this.step, out, logits: this.logits,
      k, greedy, topK, vocab: this.vocab, temperature: Tg, topP: o.topP ?? 1, plan, rows,
    });
    const dispatches = [...lse, ...p.dispatches, draw];
    if (this.drawPlans.size > 32) this.drawPlans.clear();
    this.drawPlans.set(key, { target: out, dispatches });
    return { plan, dispatches };
  }

  /** Sets row 0's uniform and log entry for the next draw, for whichever plan runs (see setDraws). */
  setDraw(u: number, index: number): void {
    this.setDraws([{ u, index }]);
  }

  /**
   * Sets the next draw's entries, row r from draws[r]: its uniform, its log entry, and the plan that
   * draws it (default: any). A queue write, so it is ordered before the next submission.
   */
  setDraws(draws: ReadonlyArray<{ u: number; index: number; plan?: number }>): void {
    if (draws.length > this.rows) throw new Error(`GpuSampler.setDraws: ${draws.length} rows, the sampler takes ${this.rows}`);
    const w = new Uint32Array(draws.length * DRAW_ENTRY_WORDS);
    const f = new Float32Array(w.buffer);
    draws.forEach(({ u, index, plan }, r) => {
      if (!(u >= 0 && u < 1)) throw new Error(`GpuSampler.setDraw: u must be in [0, 1), got ${u} (row ${r})`);
      if (!Number.isInteger(index) || index < 0) throw new Error(`GpuSampler.setDraw: index must be an integer >= 0, got ${index} (row ${r})`);
      f[r * DRAW_ENTRY_WORDS] = u;
      w[r * DRAW_ENTRY_WORDS + 1] = index;
      w[r * DRAW_ENTRY_WORDS + 2] = plan ?? DRAW_ANY_PLAN;
    });
    writeBuffer(this.ctx, this.step, w);
  }

  destroy(): void {
    for (const b of [...this.scratch, this.stats1, this.statsT, this.packed, this.step]) b.destroy();
    this.plans.clear();
    this.lsePlans.clear();
    this.drawPlans.clear();
  }
}

/** Greedy decoding: the argmax token (ties to the lowest id) and its temperature-1 log-probability. */
export async function greedy(sampler: GpuSampler): Promise<SampleResult> {
  return sampler.sample({ temperature: 0 });
}
