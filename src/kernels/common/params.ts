// Uniform blocks of mixed u32 / f32 scalars. Kernels declare a matching WGSL struct whose fields are all
// 4-byte scalars in the same order, so the byte layout is simply consecutive words.

import type { GpuContext } from '../../gpu/device';
import { createUniform } from '../../gpu/buffers';

export type Param = ['u32' | 'f32', number];

/** Packs `fields` as consecutive 32-bit words into a new uniform buffer (padded to 16 bytes). */
export function paramsUniform(ctx: GpuContext, label: string, fields: Param[], extraF32: ArrayLike<number> = []): GPUBuffer {
  const words = fields.length + extraF32.length;
  const buf = new ArrayBuffer(Math.max(16, Math.ceil((words * 4) / 16) * 16));
  const u = new Uint32Array(buf);
  const f = new Float32Array(buf);
  fields.forEach(([kind, v], i) => {
    if (kind === 'u32') {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`${label}: field ${i} must be a u32, got ${v}`);
      u[i] = v;
    } else {
      f[i] = v;
    }
  });
  for (let i = 0; i < extraF32.length; i++) f[fields.length + i] = extraF32[i];
  return createUniform(ctx, label, new Uint8Array(buf));
}

/** Throws a clear error naming the kernel and argument when a shape is not a positive integer. */
export function checkDims(kernel: string, dims: Record<string, number>, allowZero: string[] = []): void {
  for (const [k, v] of Object.entries(dims)) {
    const min = allowZero.includes(k) ? 0 : 1;
    if (!Number.isInteger(v) || v < min) throw new Error(`${kernel}: '${k}' must be an integer >= ${min}, got ${v}`);
  }
}

/** WGSL snippet: flat workgroup index for grids split by grid1d(). */
export const FLAT_WG = 'wg.x + wg.y * nwg.x';
