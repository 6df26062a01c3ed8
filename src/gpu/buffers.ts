// Buffer creation, upload and read-back. Every GPU buffer in the project is made here so that labels
// (which Dawn and Chrome put in validation errors) and out-of-memory reporting are uniform.

import { AgentFlowError, type ErrorCategory } from '../errors';
import { GpuDeviceLostError, type GpuContext } from './device';

export const STORAGE = 0x80; // GPUBufferUsage.STORAGE without relying on the global in Node
export const COPY_SRC = 0x04;
export const COPY_DST = 0x08;
export const MAP_READ = 0x01;
export const UNIFORM = 0x40;

export class GpuOutOfMemoryError extends AgentFlowError {
  override readonly category: ErrorCategory = 'gpu-out-of-memory';
  constructor(public readonly label: string, public readonly bytes: number, detail: string) {
    super(`Out of GPU memory allocating '${label}' (${(bytes / 2 ** 20).toFixed(1)} MiB): ${detail}`);
    this.name = 'GpuOutOfMemoryError';
  }
}

/** Storage buffers are padded to 4 bytes, the smallest size WGSL arrays can bind. */
export function alignTo(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

function checkBufferSize(ctx: GpuContext, label: string, byteLength: number): number {
  const size = Math.max(4, alignTo(byteLength, 4));
  if (size > ctx.caps.limits.maxBufferSize) {
    throw new GpuOutOfMemoryError(label, size, `larger than this adapter's maxBufferSize (${ctx.caps.limits.maxBufferSize} B)`);
  }
  return size;
}

export function createStorage(ctx: GpuContext, label: string, byteLength: number, extraUsage = 0): GPUBuffer {
  const size = checkBufferSize(ctx, label, byteLength);
  return ctx.device.createBuffer({ label, size, usage: STORAGE | COPY_SRC | COPY_DST | extraUsage });
}

/** Like createStorage, but surfaces an out-of-memory condition as a GpuOutOfMemoryError naming the buffer. */
export async function createStorageChecked(ctx: GpuContext, label: string, byteLength: number): Promise<GPUBuffer> {
  // The size check throws before the error scope is pushed, so no scope is ever left dangling.
  checkBufferSize(ctx, label, byteLength);
  ctx.device.pushErrorScope('out-of-memory');
  const buf = createStorage(ctx, label, byteLength);
  const err = await ctx.device.popErrorScope();
  if (err) {
    buf.destroy();
    throw new GpuOutOfMemoryError(label, byteLength, err.message);
  }
  return buf;
}

export function uploadStorage(ctx: GpuContext, label: string, data: ArrayBufferView): GPUBuffer {
  const buf = createStorage(ctx, label, data.byteLength);
  writeBuffer(ctx, buf, data);
  return buf;
}

export function writeBuffer(ctx: GpuContext, buf: GPUBuffer, data: ArrayBufferView, byteOffset = 0): void {
  // writeBuffer needs a multiple of 4 bytes; pad odd-length f16 data with a zero.
  if (data.byteLength % 4 !== 0) {
    const padded = new Uint8Array(alignTo(data.byteLength, 4));
    padded.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    ctx.device.queue.writeBuffer(buf, byteOffset, padded);
    return;
  }
  ctx.device.queue.writeBuffer(buf, byteOffset, data.buffer, data.byteOffset, data.byteLength);
}

export function createUniform(ctx: GpuContext, label: string, data: ArrayBufferView): GPUBuffer {
  const buf = ctx.device.createBuffer({ label, size: alignTo(Math.max(16, data.byteLength), 16), usage: UNIFORM | COPY_DST });
  writeBuffer(ctx, buf, data);
  return buf;
}

/** How long a failed map waits for the device's `lost` to say whether a loss caused it. */
const LOSS_GRACE_MS = 1000;

/** Copies `byteLength` bytes of `src` to the CPU; a device loss rejects with a GpuDeviceLostError. */
export async function readBuffer(ctx: GpuContext, src: GPUBuffer, byteLength = src.size, srcOffset = 0): Promise<ArrayBuffer> {
  const size = alignTo(byteLength, 4);
  const staging = ctx.device.createBuffer({ label: `readback:${src.label}`, size, usage: MAP_READ | COPY_DST });
  const enc = ctx.device.createCommandEncoder({ label: `readback:${src.label}` });
  enc.copyBufferToBuffer(src, srcOffset, staging, 0, size);
  ctx.device.queue.submit([enc.finish()]);
  try {
    await staging.mapAsync(0x0001 /* GPUMapMode.READ */);
  } catch (e) {
    // A loss aborts pending maps (Chromium rejects them before `lost` resolves): name the loss, not the abort.
    const info = await Promise.race([ctx.lost, new Promise<null>((r) => setTimeout(() => r(null), LOSS_GRACE_MS))]);
    staging.destroy();
    if (info) throw new GpuDeviceLostError(info.reason ?? 'unknown', `The GPU device was lost while reading '${src.label}' back (${info.message || info.reason}). Reload the model to continue.`);
    throw e;
  }
  const out = staging.getMappedRange().slice(0, byteLength);
  staging.unmap();
  staging.destroy();
  return out;
}

export async function readF32(ctx: GpuContext, src: GPUBuffer, count?: number, offsetElems = 0): Promise<Float32Array> {
  const n = count ?? src.size / 4 - offsetElems;
  return new Float32Array(await readBuffer(ctx, src, n * 4, offsetElems * 4));
}
