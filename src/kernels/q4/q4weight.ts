// A 4-bit weight as the kernels take it: the two GPU buffers of an MLC q4f16_1 / q4f32_1 tensor, used
// where the f16 kernels take one `W: GPUBuffer`.
import type { GpuContext } from '../../gpu/device';
import { uploadStorage } from '../../gpu/buffers';
import { Q4_GROUP, checkQ4InDim, type Q4Matrix, type Q4ScaleDtype } from './q4.ref';
import type { Q4Path } from './q4.wgsl';

export interface Q4Weight {
  /** `<name>.q_weight`: uint32 [rows, in/8], nibble j of word k is input column 8k+j. */
  qWeight: GPUBuffer;
  /** `<name>.q_scale`: [rows, in/32] f16 bits (q4f16_1, default) or f32 (q4f32_1). */
  qScale: GPUBuffer;
  /** Dtype of qScale (default 'f16'). */
  scale?: Q4ScaleDtype;
  /**
   * Row of the buffers where this matrix starts (default 0): lets several matrices, or the vocabulary
   * windows of one embedding, share one pair of buffers without copies.
   */
  rowBase?: number;
  /**
   * f16 [rows, in] copy of deq(W) for all rows of the buffers (rowBase applies to it too), made by
   * q4DequantF16 where the tensor-core matmuls will read it (model/weights.ts f16Copies); absent otherwise.
   */
  f16?: GPUBuffer;
}

export function q4Path(ctx: GpuContext, w: Q4Weight): Q4Path {
  return { f16: ctx.caps.f16, scale: w.scale ?? 'f16' };
}

/**
 * Throws, naming the kernel and the buffer, unless `w` holds rows [rowBase + first, rowBase + first + rows)
 * of an [*, inDim] q4 matrix.
 */
export function checkQ4Weight(kernel: string, w: Q4Weight, inDim: number, rows: number, first = 0): void {
  checkQ4InDim(kernel, inDim);
  const rowBase = w.rowBase ?? 0;
  if (!Number.isInteger(rowBase) || rowBase < 0) throw new Error(`${kernel}: rowBase must be an integer >= 0, got ${rowBase}`);
  const scale = w.scale ?? 'f16';
  if (scale !== 'f16' && scale !== 'f32') throw new Error(`${kernel}: scale dtype must be 'f16' or 'f32', got ${String(scale)}`);
  const end = rowBase + first + rows;
  const wantW = (end * inDim) / 2;
  if (w.qWeight.size < wantW) {
    throw new Error(`${kernel}: q_weight ('${w.qWeight.label}', ${w.qWeight.size} B) is smaller than rows [0, ${end}) x ${inDim / 8} u32 words (${wantW} B)`);
  }
  const wantS = (end * inDim) / Q4_GROUP * (scale === 'f16' ? 2 : 4);
  if (w.qScale.size < wantS) {
    throw new Error(`${kernel}: q_scale ('${w.qScale.label}', ${w.qScale.size} B) is smaller than rows [0, ${end}) x ${inDim / Q4_GROUP} ${scale} scales (${wantS} B)`);
  }
}

/** Uploads a CPU-side quantized matrix (tests, benchmarks; the engine uploads the checkpoint's bytes). */
export function uploadQ4(ctx: GpuContext, label: string, m: Q4Matrix): Q4Weight {
  return {
    qWeight: uploadStorage(ctx, `${label}.q_weight`, m.qWeight),
    qScale: uploadStorage(ctx, `${label}.q_scale`, m.qScale),
    scale: m.scale,
  };
}

export function destroyQ4(w: Q4Weight): void {
  w.qWeight.destroy();
  w.qScale.destroy();
}
