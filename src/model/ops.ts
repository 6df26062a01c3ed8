// The kernel calls the forward pass (and the trainer's backward) makes, in the engine's vocabulary. Each
// wraps one dispatch builder from src/kernels/<op>/ (which own the WGSL and the layouts of LAYOUTS.md);
// this file maps names and picks the f16 or the 4-bit kernel from the weight's kind, so callers never do.
import type { GpuContext } from '../gpu/device';
import type { Dispatch } from '../gpu/pipelines';
import { embedding } from '../kernels/embedding/embedding';
import { rmsnorm as rmsnormKernel } from '../kernels/rmsnorm/rmsnorm';
import { matmul, type MatmulArgs } from '../kernels/matmul/matmul';
import { matmulSgm, matmulSgmProblem } from '../kernels/matmul/matmul.sgm';
import { matmulBackwardSgm, sgmBackwardProblem } from '../kernels/matmul/matmul.backward.sgm';
import { SGM_MIN_ROWS } from '../kernels/common/sgm-tile.wgsl';
import { matmulBackwardSplitK, type MatmulBackwardArgs } from '../kernels/matmul/matmul.backward';
import { q4MatmulBackwardSplitK } from '../kernels/q4/q4matmul.backward';
import { q4Embedding, q4Matmul } from '../kernels/q4';
import { loraDown, loraUp } from '../kernels/lora/lora';
import { loraDownGroup, loraUpGroup } from '../kernels/lora/lora.group';
import { LORA_GROUP_MAX_DOWN, LORA_GROUP_MAX_UP } from '../kernels/lora/lora.group.wgsl';
export { rope } from '../kernels/rope/rope';
export { attention } from '../kernels/attention/attention';
export { swiglu } from '../kernels/swiglu/swiglu';
export { lseChunk, lseFinalize } from '../kernels/logits/logits';
import { isQ4, type MatrixWeight, type Qwen2Weights, type RowChunk } from './weights';

/** x[n] = embed[ids[n]], one dispatch per embedding chunk. */
export async function embed(ctx: GpuContext, w: Qwen2Weights, ids: GPUBuffer, x: GPUBuffer, n: number): Promise<Dispatch[]> {
  const out: Dispatch[] = [];
  for (const ch of w.embed) {
    const a = { ids, x, n, hidden: w.config.hiddenSize, vocab: w.config.vocabSize, rowOffset: ch.rowOffset, rowCount: ch.rowCount };
    out.push(await (isQ4(ch.weight) ? q4Embedding(ctx, { ...a, E: ch.weight }) : embedding(ctx, { ...a, E: ch.weight })));
  }
  return out;
}

export function rmsnorm(ctx: GpuContext, x: GPUBuffer, w: GPUBuffer, y: GPUBuffer, rstd: GPUBuffer, n: number, hidden: number, eps: number): Promise<Dispatch> {
  return rmsnormKernel(ctx, { x, w, y, rstd, n, hidden, eps });
}

/** MatmulArgs whose W is either kind of frozen matrix. */
export interface LinearArgs extends Omit<MatmulArgs, 'W'> {
  W: MatrixWeight;
}

/**
 * y[N, out] (+)= x[N, in] · W^T + b, with W f16 or 4-bit. The kernel follows the row count unless
 * `kernel` / `tileRows` force one: N <= 4 (f16) or 8 (4-bit) rows, as in decode, the rows kernel, which reads W once for all rows; else
 * the register tiles in tileRowsFor(N) rows (16, 32, 64, or 128 where the device has the workgroup memory), so short prefills and a few packed sequences
 * do not compute 64-row tiles of padding. Every tile shape gives the same bits.
 */
export function linear(ctx: GpuContext, a: LinearArgs): Promise<Dispatch> {
  const W = a.W;
  // Tensor cores (a device made with subgroup matrices, 64+ rows): an f16 matrix, or a 4-bit one's f16 copy.
  const f16 = isQ4(W) ? W.f16 : W;
  if (f16 && a.kernel === undefined && a.tileRows === undefined && !matmulSgmProblem(ctx, a)) {
    return matmulSgm(ctx, { ...a, W: f16, wRow: isQ4(W) ? (W.rowBase ?? 0) : 0 });
  }
  return isQ4(W) ? q4Matmul(ctx, { ...a, W }) : matmul(ctx, { ...a, W });
}

/**
 * dx (+)= dy · W[rowOffset .. rowOffset+outDim, :]: the input gradient of a frozen linear, W f16 or 4-bit.
 * With `partials` (f32 scratch, any buffer dead during the call), a long reduction over a small dx grid is
 * split over outDim and summed by a second dispatch (kernels/matmul/matmul.splitk.ts): 1 or 2 dispatches.
 */
export function linearBackward(ctx: GpuContext, W: MatrixWeight, a: Omit<MatmulBackwardArgs, 'W'> & { partials?: GPUBuffer }): Promise<Dispatch[]> {
  // Tensor cores as in linear(): an f16 matrix or a 4-bit one's f16 copy, 64+ rows of dy.
  const f16 = isQ4(W) ? W.f16 : W;
  if (f16 && a.n >= SGM_MIN_ROWS && !sgmBackwardProblem(ctx, a)) {
    return matmulBackwardSgm(ctx, { ...a, W: f16, rowOffset: (a.rowOffset ?? 0) + (isQ4(W) ? (W.rowBase ?? 0) : 0) });
  }
  return isQ4(W) ? q4MatmulBackwardSplitK(ctx, { ...a, W }) : matmulBackwardSplitK(ctx, { ...a, W });
}

export interface LmHeadChunkArgs {
  /** f32 [rows, hidden]: final-norm output. */
  x: GPUBuffer;
  /** f32 [rows, ld]: the chunk's logits land at columns ch.rowOffset .. ch.rowOffset+ch.rowCount. */
  logits: GPUBuffer;
  rows: number;
  hidden: number;
  /** Row stride of logits (the vocabulary size). */
  ld: number;
}

/** Logits of one LM-head chunk's vocabulary rows. */
export function lmHead(ctx: GpuContext, ch: RowChunk, a: LmHeadChunkArgs): Promise<Dispatch> {
  return linear(ctx, { x: a.x, W: ch.weight, y: a.logits, n: a.rows, inDim: a.hidden, outDim: ch.rowCount, yStride: a.ld, yOffset: ch.rowOffset });
}

export interface LmHeadBackwardChunkArgs {
  /** f32 [rows, ld] holding this chunk's dlogits at columns ch.rowOffset .. (from dlogits). */
  dlogits: GPUBuffer;
  /** f32 [rows, hidden]: gradient of the final-norm output, accumulated over chunks. */
  dx: GPUBuffer;
  rows: number;
  hidden: number;
  /** Row stride of dlogits (the vocabulary size). */
  ld: number;
  /** false for the first chunk (overwrite), true for the rest. */
  accumulate: boolean;
  /**
   * f32 scratch of splitKPartialsBytes(rows, hidden) bytes (kernels/matmul/matmul.splitk.ts): with it the
   * chunk's vocabulary is split over many workgroups and summed by a second dispatch; without, one dispatch.
   */
  partials?: GPUBuffer;
}

/** dx (+)= dlogits[:, chunk] · head[chunk]: one LM-head chunk's share of the final-norm gradient (1 or 2 dispatches). */
export function lmHeadBackward(ctx: GpuContext, ch: RowChunk, a: LmHeadBackwardChunkArgs): Promise<Dispatch[]> {
  return linearBackward(ctx, ch.weight, {
    dy: a.dlogits, dx: a.dx, n: a.rows, inDim: a.hidden, outDim: ch.rowCount, rowOffset: 0, accumulate: a.accumulate, dyStride: a.ld, dyOffset: ch.rowOffset, partials: a.partials,
  });
}

export interface LoraOpArgs {
  x: GPUBuffer;
  A: GPUBuffer;
  B: GPUBuffer;
  t: GPUBuffer;
  y: GPUBuffer;
  n: number;
  inDim: number;
  outDim: number;
  r: number;
  scale: number;
}

/** t = x A^T; y += scale * t B^T. */
export async function lora(ctx: GpuContext, a: LoraOpArgs): Promise<Dispatch[]> {
  return [
    await loraDown(ctx, { x: a.x, A: a.A, t: a.t, n: a.n, inDim: a.inDim, rank: a.r }),
    await loraUp(ctx, { t: a.t, B: a.B, y: a.y, n: a.n, outDim: a.outDim, rank: a.r, scale: a.scale }),
  ];
}

/**
 * LoRA of modules that share the input x (q, k, v; gate, up) in as few dispatches as the bindings allow:
 * one down for up to three, ups in pairs. Bit-identical to lora() per module (lora.group.wgsl.ts).
 */
export async function loraShared(ctx: GpuContext, members: LoraOpArgs[]): Promise<Dispatch[]> {
  if (members.length === 0) return [];
  if (members.length === 1) return lora(ctx, members[0]);
  const { x, n, inDim } = members[0];
  if (members.some((m) => m.x !== x || m.n !== n || m.inDim !== inDim)) throw new Error('loraShared: every member must read the same x (rows and width)');
  if (members.length > LORA_GROUP_MAX_DOWN) throw new Error(`loraShared: at most ${LORA_GROUP_MAX_DOWN} modules share one input, got ${members.length}`);
  const out = [await loraDownGroup(ctx, { x, n, inDim, modules: members.map((m) => ({ A: m.A, t: m.t, rank: m.r })) })];
  for (let i = 0; i < members.length; i += LORA_GROUP_MAX_UP) {
    const pair = members.slice(i, i + LORA_GROUP_MAX_UP);
    if (pair.length === 1) out.push(await loraUp(ctx, { t: pair[0].t, B: pair[0].B, y: pair[0].y, n, outDim: pair[0].outDim, rank: pair[0].r, scale: pair[0].scale }));
    else out.push(await loraUpGroup(ctx, { n, modules: pair.map((m) => ({ t: m.t, B: m.B, y: m.y, outDim: m.outDim, rank: m.r, scale: m.scale })) }));
  }
  return out;
}
