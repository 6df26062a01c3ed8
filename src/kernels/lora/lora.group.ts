// Dispatch builders for grouped LoRA (lora.group.wgsl.ts): one down dispatch for up to three modules that
// share an input, one up dispatch for two. Same buffer layouts as lora.ts's per-module dispatches.
import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { loraDownShape, loraDownSlices, loraDownWorkgroups, loraUpWorkgroups } from './lora.wgsl';
import { LORA_DOWN_NORM_SHAPE, LORA_GROUP_MAX_DOWN, LORA_GROUP_MAX_UP, loraDownGroupWgsl, loraUpGroupWgsl } from './lora.group.wgsl';

export interface LoraGroupDownArgs {
  /** f32 [N, in], read by every module. */
  x: GPUBuffer;
  n: number;
  inDim: number;
  /** Per module: A f32 [r, in] and its output t f32 [N, r]. */
  modules: Array<{ A: GPUBuffer; t: GPUBuffer; rank: number }>;
  /**
   * Decode only: the modules read rmsnorm(x) * w (computed in the dispatch) instead of x; `xn` f32 [N, in]
   * also receives it. With a norm, one module is allowed; three with xn need 9 storage bindings, more than
   * WebGPU's default 8 (loraDownGroupStorage: callers check the device's limit before choosing the group).
   */
  norm?: { w: GPUBuffer; eps: number; xn?: GPUBuffer };
  /** Use subgroup reductions where the device has `subgroups` (default true; tests turn it off). */
  subgroups?: boolean;
}

export interface LoraGroupUpArgs {
  n: number;
  /** Per module: t f32 [N, r], B f32 [out, r], y f32 [N, out] accumulated into with scale. */
  modules: Array<{ t: GPUBuffer; B: GPUBuffer; y: GPUBuffer; outDim: number; rank: number; scale: number }>;
}

/** Storage bindings of a down group of k modules: x, k A, k t, and with a norm its weight (and xn). */
export function loraDownGroupStorage(k: number, norm: { xn: boolean } | null): number {
  return 1 + 2 * k + (norm ? 1 + Number(norm.xn) : 0);
}

/** t_m = x · A_m^T for 2-3 modules in one dispatch. */
export async function loraDownGroup(ctx: GpuContext, a: LoraGroupDownArgs): Promise<Dispatch> {
  const k = a.modules.length;
  const min = a.norm ? 1 : 2;
  if (k < min || k > LORA_GROUP_MAX_DOWN) throw new Error(`loraDownGroup: groups hold ${min} to ${LORA_GROUP_MAX_DOWN} modules${a.norm ? ' with a norm' : ''}, got ${k}`);
  const storage = loraDownGroupStorage(k, a.norm ? { xn: !!a.norm.xn } : null);
  const maxStorage = ctx.caps.limits.maxStorageBuffersPerShaderStage;
  if (storage > maxStorage) {
    throw new Error(`loraDownGroup: ${k} modules${a.norm ? ' with a norm' : ''}${a.norm?.xn ? ' and xn' : ''} need ${storage} storage buffers, the device allows ${maxStorage}`);
  }
  if (a.norm) {
    if (!(a.norm.eps > 0)) throw new Error(`loraDownGroup: norm.eps must be > 0, got ${a.norm.eps}`);
    if (a.norm.w.size < a.inDim * 4) throw new Error(`loraDownGroup: norm.w ('${a.norm.w.label}') is smaller than [${a.inDim}] f32`);
    if (a.norm.xn && a.norm.xn.size < a.n * a.inDim * 4) throw new Error(`loraDownGroup: norm.xn ('${a.norm.xn.label}') is smaller than [${a.n}, ${a.inDim}] f32`);
    if (a.norm.xn === a.x) throw new Error('loraDownGroup: norm.xn must not be x');
  }
  checkDims('loraDownGroup', { n: a.n, inDim: a.inDim, ...Object.fromEntries(a.modules.map((m, i) => [`modules[${i}].rank`, m.rank])) });
  const ranks = a.modules.map((m) => m.rank);
  const norm = a.norm ? { storeXn: !!a.norm.xn } : null;
  const shape = norm ? LORA_DOWN_NORM_SHAPE : loraDownShape(a.n);
  const sg = a.subgroups !== false && ctx.caps.subgroups;
  const name = `lora_down_group${k}${norm ? (norm.storeXn ? '_norm_xn' : '_norm') : ''}`;
  // The label is `name` (profiles count kinds by label); the pipeline name adds the variant.
  const pipeline = await getPipeline(ctx, `${name}_${shape.rows}x${shape.ranks}${sg ? '_sg' : ''}`, loraDownGroupWgsl(k, shape, sg, norm));
  const fields: Array<['u32' | 'f32', number]> = [['u32', a.n], ['u32', a.inDim], ['u32', loraDownSlices(shape, ranks)], ...[0, 1, 2].map((i): ['u32', number] => ['u32', ranks[i] ?? 0])];
  if (a.norm) fields.push(['f32', a.norm.eps]);
  const dims = paramsUniform(ctx, 'loraDownGroup.dims', fields);
  const buffers = [a.x, ...a.modules.map((m) => m.A), ...a.modules.map((m) => m.t), dims];
  if (a.norm) buffers.push(a.norm.w, ...(a.norm.xn ? [a.norm.xn] : []));
  return { pipeline, buffers, workgroups: grid1d(ctx, loraDownWorkgroups(shape, a.n, ranks)), label: name };
}

/** y_m += s_m · t_m · B_m^T for two modules in one dispatch. */
export async function loraUpGroup(ctx: GpuContext, a: LoraGroupUpArgs): Promise<Dispatch> {
  if (a.modules.length !== LORA_GROUP_MAX_UP) throw new Error(`loraUpGroup: groups hold ${LORA_GROUP_MAX_UP} modules, got ${a.modules.length}`);
  const [m0, m1] = a.modules;
  checkDims('loraUpGroup', { n: a.n, 'modules[0].outDim': m0.outDim, 'modules[0].rank': m0.rank, 'modules[1].outDim': m1.outDim, 'modules[1].rank': m1.rank });
  for (const [i, m] of a.modules.entries()) if (!Number.isFinite(m.scale)) throw new Error(`loraUpGroup: modules[${i}].scale must be finite, got ${m.scale}`);
  const pipeline = await getPipeline(ctx, 'lora_up_group2', loraUpGroupWgsl());
  const dims = paramsUniform(ctx, 'loraUpGroup.dims', [['u32', a.n], ['u32', m0.outDim], ['u32', m1.outDim], ['u32', m0.rank], ['u32', m1.rank], ['f32', m0.scale], ['f32', m1.scale]]);
  return {
    pipeline,
    buffers: [m0.t, m1.t, m0.B, m1.B, m0.y, m1.y, dims],
    workgroups: grid1d(ctx, loraUpWorkgroups(a.n, [m0.outDim, m1.outDim])),
    label: 'lora_up_group2',
  };
}
