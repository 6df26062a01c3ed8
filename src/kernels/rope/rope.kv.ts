import type { GpuContext } from '../../gpu/device';
import { getPipeline, grid1d, type Dispatch } from '../../gpu/pipelines';
import { checkDims, paramsUniform } from '../common/params';
import { ropeInvFreq } from './rope';
import { ROPE_KV_WG, ropeKvWgsl } from './rope.kv.wgsl';
import { ROPE_MAX_HALF } from './rope.wgsl';

export interface RopeKvWriteArgs {
  /** f32 [n, nH*hd], rotated in place. */
  q: GPUBuffer;
  /** f32 [n, nKV*hd] keys as projected (not modified); rotated copies go to kCache. */
  k: GPUBuffer;
  /** f32 [n, nKV*hd] values, copied to vCache. */
  v: GPUBuffer;
  /** u32 [n]: position of each row (the RoPE angle). */
  pos: GPUBuffer;
  /**
   * u32 [n]: the cache row each row's k/v go to. Default `pos` (one sequence stores position p at row p);
   * a batch of sequences gives each its own region of the cache (region start + position).
   */
  cacheRows?: GPUBuffer;
  /** f32 [maxCtx, nKV*hd] one layer's key cache. */
  kCache: GPUBuffer;
  /** f32 [maxCtx, nKV*hd] one layer's value cache. */
  vCache: GPUBuffer;
  n: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  theta: number;
  /** Rows in the caches; rows whose cache row is >= maxCtx are not written. */
  maxCtx: number;
}

function needBytes(name: string, buf: GPUBuffer, bytes: number): void {
  if (buf.size < bytes) throw new Error(`ropeKvWrite: '${name}' ('${buf.label}') holds ${buf.size} bytes, needs ${bytes}`);
}

/**
 * One decode dispatch: RoPE on q in place, rope(k) and v written to cache row cacheRows[r] (default pos[r])
 * of kCache / vCache for each row r. The rotation is bit-identical to rope() (same table, angle, sinCos and expressions).
 */
export async function ropeKvWrite(ctx: GpuContext, a: RopeKvWriteArgs): Promise<Dispatch> {
  checkDims('ropeKvWrite', { n: a.n, nHeads: a.nHeads, nKvHeads: a.nKvHeads, headDim: a.headDim, maxCtx: a.maxCtx });
  if (a.headDim % 2 !== 0 || a.headDim / 2 > ROPE_MAX_HALF) throw new Error(`ropeKvWrite: headDim must be even and <= ${2 * ROPE_MAX_HALF}, got ${a.headDim}`);
  if (!(a.theta > 0)) throw new Error(`ropeKvWrite: theta must be > 0, got ${a.theta}`);
  const kvRow = a.nKvHeads * a.headDim * 4;
  needBytes('q', a.q, a.n * a.nHeads * a.headDim * 4);
  needBytes('k', a.k, a.n * kvRow);
  needBytes('v', a.v, a.n * kvRow);
  needBytes('pos', a.pos, a.n * 4);
  const cacheRows = a.cacheRows ?? a.pos;
  needBytes('cacheRows', cacheRows, a.n * 4);
  needBytes('kCache', a.kCache, a.maxCtx * kvRow);
  needBytes('vCache', a.vCache, a.maxCtx * kvRow);
  const pipeline = await getPipeline(ctx, 'rope_kv_write', ropeKvWgsl());
  const table = new Float32Array(ROPE_MAX_HALF);
  table.set(ropeInvFreq(a.theta, a.headDim));
  // Three padding words put the vec4 table at byte 32, where the WGSL struct aligns it.
  const dims = paramsUniform(
    ctx,
    'ropeKvWrite.dims',
    [['u32', a.n], ['u32', a.nHeads], ['u32', a.nKvHeads], ['u32', a.headDim], ['u32', a.maxCtx], ['u32', 0], ['u32', 0], ['u32', 0]],
    table,
  );
  const threads = a.n * (a.nHeads + a.nKvHeads) * (a.headDim / 2);
  return {
    pipeline,
    buffers: [a.q, a.k, a.v, a.pos, a.kCache, a.vCache, dims, cacheRows],
    workgroups: grid1d(ctx, Math.ceil(threads / ROPE_KV_WG)),
    label: 'rope_kv_write',
  };
}
