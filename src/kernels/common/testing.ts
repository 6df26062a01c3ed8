// Helpers shared by the kernel GPU tests (no node:fs: these run in Chromium too).

import type { GpuContext } from '../../gpu/device';
import { uploadStorage, createStorage } from '../../gpu/buffers';
import { Rng } from '../../util/rng';
import { fromF16Array, toF16Array } from '../../util/half';

/** Random f16 weight matrix: the bits to upload and the exact values the GPU sees. */
export function randomHalf(rng: Rng, n: number, scale = 1): { bits: Uint16Array; values: Float32Array } {
  const bits = toF16Array(rng.fill(n, scale));
  return { bits, values: fromF16Array(bits) };
}

export function u32Buffer(ctx: GpuContext, label: string, values: ArrayLike<number>): GPUBuffer {
  return uploadStorage(ctx, label, Uint32Array.from(values));
}

export function f32Buffer(ctx: GpuContext, label: string, values: ArrayLike<number>): GPUBuffer {
  return uploadStorage(ctx, label, Float32Array.from(values));
}

/**
 * A matmul test's inputs after its weights: x [n, inDim], a bias [outDim] and a y [n, outDim] to accumulate
 * onto, drawn in this order (the tests' seeds pin the data), with x and the bias on the GPU.
 */
export function matmulInputs(ctx: GpuContext, rng: Rng, n: number, inDim: number, outDim: number) {
  const x = rng.fill(n * inDim);
  const b = rng.fill(outDim);
  const y0 = rng.fill(n * outDim);
  return { x, b, y0, xb: f32Buffer(ctx, 'x', x), bb: f32Buffer(ctx, 'b', b) };
}

export function emptyF32(ctx: GpuContext, label: string, n: number): GPUBuffer {
  return createStorage(ctx, label, n * 4);
}

/** max |got - want| / max(1, max |want|): an error relative to the magnitude of the result. */
export function relMaxErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) throw new Error(`length mismatch: ${got.length} vs ${want.length}`);
  let m = 0;
  let scale = 1;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    m = Math.max(m, Number.isNaN(d) ? Infinity : d);
  }
  return m / scale;
}

/** How many elements of two f32 arrays differ in their bits (NaN payloads and -0 included). */
export function bitDiffCount(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`length mismatch: ${a.length} vs ${b.length}`);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let n = 0;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) n++;
  return n;
}
