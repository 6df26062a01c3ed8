import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { q4PathName } from './q4.wgsl';
import { Q4_ROWS, Q4_ROWS_CHOICES, Q4_SMALL_N } from './q4matmul.wgsl';
import { Q4D_KSPLIT_CHOICES, Q4D_LORA_IN_MAX_RANK, Q4D_MAX_SEGMENTS, Q4D_SG_WG, Q4D_WG, q4DecodeBindings, q4DecodeWgsl, type Q4DecodeVariant } from './q4decode.wgsl';
import { checkQ4Weight, q4Path, type Q4Weight } from './q4weight';

/**
 * WebGPU's default storage bindings per stage, what every device offers. Variants past it (c_attn with a
 * LoRA up per segment: 13) run where the device grants more (requestGpu asks for the adapter's limit;
 * lavapipe's is 16); callers check q4DecodeStorage against the device's limit and fall back where it is short.
 */
export const Q4D_MAX_STORAGE = 8;

/** Storage bindings of a q4DecodeLinear variant, to choose a fusion the device can bind. */
export function q4DecodeStorage(o: { params: number; storeXn?: boolean; separateResidual?: boolean; lora: boolean[]; swiglu?: boolean; segments: number }): number {
  const v: Q4DecodeVariant = {
    nr: 1, rows: 2, subgroups: false, params: o.params, normParam: -1, xCache: 0, storeXn: !!o.storeXn, segments: o.segments,
    biasParam: [], residual: o.separateResidual ? 'separate' : 'none', swiglu: !!o.swiglu, lora: o.lora, kSplit: 1,
  };
  return q4DecodeBindings(v).length - 1;
}

/** An f32 vector inside a buffer: `buffer[offset ..]` (offset in elements). */
export interface F32Slice {
  buffer: GPUBuffer;
  offset?: number;
}

export interface Q4DecodeSegment {
  /** f32 [n, rows] out. */
  y: GPUBuffer;
  /** Out rows of this segment (consecutive rows of W's window). */
  rows: number;
  bias?: F32Slice;
  lora?: Q4DecodeLora;
}

/** A LoRA's up projection added in the epilogue: y += scale * t[n, rank] · B[out, rank]^T. */
export interface Q4DecodeLora {
  /** f32 [n, rank]: x_lora · A^T, from a LoRA down dispatched before this one. Exactly one of t and A. */
  t?: GPUBuffer;
  /**
   * f32 [rank, inDim] (PEFT lora_A.weight): the kernel computes t = x · A^T itself (no down dispatch before
   * it). Only for a single output segment reading x without a norm, rank <= Q4D_LORA_IN_MAX_RANK.
   */
  A?: GPUBuffer;
  /** f32 [rows, rank] (the slot's rows). */
  B: GPUBuffer;
  rank: number;
  scale: number;
}

export interface Q4DecodeNorm {
  /** f32 [inDim] RMSNorm weight. */
  w: F32Slice;
  eps: number;
  /** f32 [n, inDim]: also store rmsnorm(x) * w here (for a LoRA that reads it). */
  xn?: GPUBuffer;
}

export interface Q4DecodeArgs {
  /** 4-bit [out, inDim] window (rowBase) of q_weight / q_scale; out = sum of segment rows, or 2 * I with swiglu. */
  W: Q4Weight;
  /** f32 [n, inDim]. */
  x: GPUBuffer;
  n: number;
  inDim: number;
  /** Where the out rows go, in order (1..3 segments). Exactly one of `outputs` / `swiglu`. */
  outputs?: Q4DecodeSegment[];
  /** W's window is [gate (I rows); up (I rows)]: act[n, I] = silu(x·gate^T) * (x·up^T), nothing else written. */
  swiglu?: { act: GPUBuffer; intermediate: number; gateLora?: Q4DecodeLora; upLora?: Q4DecodeLora };
  norm?: Q4DecodeNorm;
  /** f32 [n, out]: y = residual + W·x (one segment; may be the segment's y itself). */
  residual?: GPUBuffer;
  /**
   * With a norm: keep the normalised rows in workgroup memory (default: where they fit the device's
   * workgroup storage; true requires it, false normalises in registers as x is loaded).
   */
  cacheX?: boolean;
  /** Use subgroups where the device has them (default true; tests turn it off). */
  subgroups?: boolean;
  /**
   * Weight rows per workgroup (one of Q4_ROWS_CHOICES). Default: Q4_ROWS without subgroups; with them
   * 16 / kSplit (at least 2), so a workgroup holds 8 (pair, K slice) items, one per 32-wide subgroup.
   */
  rowsPerWorkgroup?: number;
  /**
   * Subgroup kernel: K slices per row pair (one of Q4D_KSPLIT_CHOICES). Default: enough that a 32-wide
   * subgroup's lanes each take at most ~2 groups of a row (inDim / 32 groups: 1 up to 1024 wide, 4 at 4864).
   * Ignored without subgroups (the lanes of a pair split K there).
   */
  kSplit?: number;
}

/** Default K slices: the power of two <= ceil(groups / 32), capped at 8 (one 32-lane subgroup per slice pass). */
export function q4DecodeKSplit(inDim: number): number {
  const want = Math.ceil(inDim / 32 / 32);
  let k = 1;
  while (k * 2 <= Math.min(want, 8)) k *= 2;
  return k;
}

const label = (b: GPUBuffer) => `'${b.label}'`;

/**
 * One dispatch of y = [residual +] deq(W) · prologue(x) [+ bias] for decode (n <= Q4_SMALL_N), with the options
 * of q4decode.wgsl.ts. Throws, naming the buffer, on any size or aliasing problem.
 */
export async function q4DecodeLinear(ctx: GpuContext, a: Q4DecodeArgs): Promise<Dispatch> {
  const K = 'q4DecodeLinear';
  checkDims(K, { n: a.n, inDim: a.inDim });
  if (a.n > Q4_SMALL_N) throw new Error(`${K}: decode rows n must be <= ${Q4_SMALL_N}, got ${a.n}`);
  if (!!a.outputs === !!a.swiglu) throw new Error(`${K}: give exactly one of 'outputs' and 'swiglu'`);
  const segs = a.outputs ?? [];
  if (a.outputs && (segs.length < 1 || segs.length > Q4D_MAX_SEGMENTS)) throw new Error(`${K}: 1..${Q4D_MAX_SEGMENTS} output segments, got ${segs.length}`);
  segs.forEach((s, i) => checkDims(K, { [`outputs[${i}].rows`]: s.rows }));
  if (a.swiglu) checkDims(K, { 'swiglu.intermediate': a.swiglu.intermediate });
  const outRows = a.swiglu ? a.swiglu.intermediate : segs.reduce((t, s) => t + s.rows, 0);
  checkQ4Weight(K, a.W, a.inDim, a.swiglu ? 2 * outRows : outRows);
  const sg = a.subgroups !== false && ctx.caps.subgroups;
  const kSplit = sg ? (a.kSplit ?? q4DecodeKSplit(a.inDim)) : 1;
  if (sg && !Q4D_KSPLIT_CHOICES.includes(kSplit)) throw new Error(`${K}: kSplit must be one of ${Q4D_KSPLIT_CHOICES.join(', ')}, got ${kSplit}`);
  const rows = a.rowsPerWorkgroup ?? (sg ? Math.max(2, Q4_ROWS / kSplit) : Q4_ROWS);
  if (!Q4_ROWS_CHOICES.includes(rows)) throw new Error(`${K}: rowsPerWorkgroup must be one of ${Q4_ROWS_CHOICES.join(', ')}, got ${rows}`);

  const need = (b: GPUBuffer, what: string, floats: number) => {
    if (b.size < floats * 4) throw new Error(`${K}: ${what} (${label(b)}, ${b.size} B) is smaller than ${floats} f32 (${floats * 4} B)`);
  };
  need(a.x, 'x', a.n * a.inDim);
  const outs = a.swiglu ? [a.swiglu.act] : segs.map((s) => s.y);
  if (a.swiglu) need(a.swiglu.act, 'swiglu.act', a.n * outRows);
  segs.forEach((s, i) => need(s.y, `outputs[${i}].y`, a.n * s.rows));
  const written = [...outs, ...(a.norm?.xn ? [a.norm.xn] : [])];
  for (const [i, b] of written.entries()) {
    if (b === a.x) throw new Error(`${K}: output ${label(b)} is also x; x and the outputs must be different buffers`);
    if (written.indexOf(b) !== i) throw new Error(`${K}: buffer ${label(b)} is written twice (outputs and xn must be different buffers)`);
  }

  // Param buffers (norm weight, biases), each bound once however many slices it holds.
  const params: GPUBuffer[] = [];
  const paramOf = (sl: F32Slice, what: string, len: number): [number, number] => {
    const off = sl.offset ?? 0;
    if (!Number.isInteger(off) || off < 0) throw new Error(`${K}: ${what} offset must be an integer >= 0, got ${off}`);
    need(sl.buffer, what, off + len);
    if (written.includes(sl.buffer)) throw new Error(`${K}: ${what} (${label(sl.buffer)}) is also written by this dispatch`);
    let i = params.indexOf(sl.buffer);
    if (i < 0) i = params.push(sl.buffer) - 1;
    return [i, off];
  };
  let normParam = -1;
  let normOff = 0;
  if (a.norm) {
    if (!(a.norm.eps >= 0)) throw new Error(`${K}: norm.eps must be >= 0, got ${a.norm.eps}`);
    [normParam, normOff] = paramOf(a.norm.w, 'norm.w', a.inDim);
    if (a.norm.xn) need(a.norm.xn, 'norm.xn', a.n * a.inDim);
  }
  const biasParam: number[] = [];
  const biasOff: number[] = [0, 0, 0];
  segs.forEach((s, i) => {
    if (!s.bias) return void biasParam.push(-1);
    const [pi, off] = paramOf(s.bias, `outputs[${i}].bias`, s.rows);
    biasParam.push(pi);
    biasOff[i] = off;
  });

  let residual: Q4DecodeVariant['residual'] = 'none';
  if (a.residual) {
    if (a.swiglu || segs.length !== 1) throw new Error(`${K}: a residual needs exactly one output segment (and no swiglu)`);
    need(a.residual, 'residual', a.n * outRows);
    residual = a.residual === segs[0].y ? 'inplace' : 'separate';
    if (a.residual === a.x) throw new Error(`${K}: residual ${label(a.residual)} is also x`);
    if (residual === 'separate' && written.includes(a.residual)) throw new Error(`${K}: residual ${label(a.residual)} is also written by this dispatch`);
  }

  const loras = a.swiglu ? [a.swiglu.gateLora, a.swiglu.upLora] : segs.map((s) => s.lora);
  const slotRows = a.swiglu ? [outRows, outRows] : segs.map((s) => s.rows);
  loras.forEach((lo, s) => {
    if (!lo) return;
    const what = a.swiglu ? `swiglu.${s ? 'upLora' : 'gateLora'}` : `outputs[${s}].lora`;
    checkDims(K, { [`${what}.rank`]: lo.rank });
    if (!Number.isFinite(lo.scale)) throw new Error(`${K}: ${what}.scale must be finite, got ${lo.scale}`);
    if (!!lo.t === !!lo.A) throw new Error(`${K}: ${what} needs exactly one of t (a LoRA down's output) and A (computed here)`);
    if (lo.A) {
      if (a.swiglu || segs.length !== 1 || a.norm) throw new Error(`${K}: ${what}.A (the LoRA down in this dispatch) needs a single output segment, without swiglu or a norm`);
      if (lo.rank > Q4D_LORA_IN_MAX_RANK) throw new Error(`${K}: ${what}.A: rank ${lo.rank} exceeds ${Q4D_LORA_IN_MAX_RANK} (dispatch the LoRA down and pass t)`);
      need(lo.A, `${what}.A`, lo.rank * a.inDim);
    } else need(lo.t!, `${what}.t`, a.n * lo.rank);
    need(lo.B, `${what}.B`, slotRows[s] * lo.rank);
    for (const b of [lo.t ?? lo.A!, lo.B]) if (written.includes(b)) throw new Error(`${K}: ${what} reads ${label(b)}, which this dispatch writes`);
  });
  // Workgroup bytes with the rows cached: xs, the norm tree and its flag word, and the subgroup counter and
  // slice sums or the reduction arrays.
  const wg = sg ? Q4D_SG_WG : Q4D_WG;
  const wgBytes = a.n * a.inDim * 4 + a.n * wg * 4 + 4 + (sg ? 4 + (kSplit > 1 ? (rows / 2) * kSplit * a.n * 2 * 4 : 0) : 2 * a.n * wg * 4);
  const fits = wgBytes <= ctx.caps.limits.maxComputeWorkgroupStorageSize;
  if (a.cacheX && !fits) throw new Error(`${K}: cacheX needs ${wgBytes} B of workgroup memory, the device allows ${ctx.caps.limits.maxComputeWorkgroupStorageSize}`);
  const xCache = a.norm && a.cacheX !== false && fits ? a.inDim / 4 : 0;
  if (loras[0]?.A) {
    // No norm here: the subgroup counter and slice sums or the reduction arrays, plus t and its slice sums.
    const loraBytes = (sg ? 4 + (kSplit > 1 ? (rows / 2) * kSplit * a.n * 2 * 4 : 0) : 2 * a.n * wg * 4) + a.n * (Q4D_LORA_IN_MAX_RANK + wg) * 4;
    const max = ctx.caps.limits.maxComputeWorkgroupStorageSize;
    if (loraBytes > max) throw new Error(`${K}: the LoRA down in this dispatch (outputs[0].lora.A) needs ${loraBytes} B of workgroup memory, the device allows ${max}; pass t instead`);
  }
  const v: Q4DecodeVariant = {
    nr: a.n, rows, subgroups: sg, params: params.length, normParam, xCache, storeXn: !!a.norm?.xn,
    segments: a.swiglu ? 1 : segs.length, biasParam, residual, swiglu: !!a.swiglu, lora: loras.map((l) => !!l), kSplit,
    loraIn: !!loras[0]?.A,
  };
  const roles = q4DecodeBindings(v);
  const storage = roles.length - 1; // all but the uniform
  const maxStorage = ctx.caps.limits.maxStorageBuffersPerShaderStage;
  if (storage > maxStorage) {
    throw new Error(`${K}: ${storage} storage buffers (${roles.filter((r) => r !== 'dims').join(', ')}) exceed the device's ${maxStorage}; pack the norm weight and biases into one buffer, or use fewer LoRA epilogues`);
  }
  const p = q4Path(ctx, a.W);
  const name = [
    `q4_decode${a.n}x${rows}${kSplit > 1 ? `k${kSplit}` : ''}${sg ? '_sg' : ''}_${q4PathName(p)}`,
    a.norm ? `_norm${xCache ? `cached${a.inDim}` : ''}${v.storeXn ? '_xn' : ''}` : '',
    a.swiglu ? '_swiglu' : `_seg${segs.length}`,
    biasParam.some((b) => b >= 0) ? `_bias${biasParam.join('')}` : '',
    `_p${params.length}`,
    residual !== 'none' ? `_res${residual}` : '',
    v.lora.some((l) => l) ? `_lora${v.lora.map(Number).join('')}${v.loraIn ? 'in' : ''}` : '',
  ].join('');
  const pipeline = await getPipeline(ctx, name, q4DecodeWgsl(p, v));
  const e0 = segs[0]?.rows ?? outRows;
  const e1 = e0 + (segs[1]?.rows ?? 0);
  const dims = paramsUniform(ctx, `${K}.dims`, [
    ['u32', a.n], ['u32', a.inDim], ['u32', a.W.rowBase ?? 0], ['u32', outRows], ['u32', e0], ['u32', e1], ['u32', normOff],
    ['f32', a.norm?.eps ?? 0], ['u32', biasOff[0]], ['u32', biasOff[1]], ['u32', biasOff[2]],
    ...[0, 1, 2].flatMap((s): Array<['u32' | 'f32', number]> => [['u32', loras[s]?.rank ?? 0], ['f32', loras[s]?.scale ?? 0]]),
  ]);
  const byRole: Record<string, GPUBuffer> = { Wq: a.W.qWeight, S: a.W.qScale, x: a.x, dims };
  params.forEach((b, i) => (byRole[`P${i}`] = b));
  if (residual === 'separate') byRole.res = a.residual!;
  if (a.norm?.xn) byRole.xn = a.norm.xn;
  outs.forEach((b, i) => (byRole[`y${i}`] = b));
  loras.forEach((lo, s) => {
    if (lo) [byRole[s === 0 && lo.A ? 'A0' : `T${s}`], byRole[`B${s}`]] = [lo.t ?? lo.A!, lo.B];
  });
  const buffers = roles.map((r) => byRole[r]);
  const perWg = a.swiglu ? rows / 2 : rows;
  return { pipeline, buffers, workgroups: grid1d(ctx, Math.ceil(outRows / perWg)), label: name };
}
