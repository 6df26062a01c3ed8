// The runtime's ways of handing work to the GPU and taking results back, each failing clearly when the
// device is lost instead of hanging.
import { assertDeviceAlive, GpuDeviceLostError, type GpuContext } from '../gpu/device';
import { readBuffer } from '../gpu/buffers';
import { encodeSteps, type EncodeInputs, type Step } from '../model/graph';

/** Step lists encoded in order (all with the same encode inputs) and submitted as one command buffer. */
export function submitSteps(ctx: GpuContext, steps: Step[][], doing: string, inputs: EncodeInputs = {}): void {
  assertDeviceAlive(ctx, doing);
  const enc = ctx.device.createCommandEncoder({ label: doing });
  for (const s of steps) encodeSteps(ctx, enc, s, inputs);
  ctx.device.queue.submit([enc.finish()]);
}

/**
 * `p`, or a GpuDeviceLostError if the device is lost first (a read-back would otherwise never settle). A
 * read-back the loss aborts already rejects with a GpuDeviceLostError (readBuffer).
 */
export function unlessLost<T>(ctx: GpuContext, p: Promise<T>, doing: string): Promise<T> {
  const lost = ctx.lost.then((info): T => {
    throw new GpuDeviceLostError(info.reason ?? 'unknown', `The GPU device was lost while ${doing} (${info.message || info.reason}). Reload the model to continue.`);
  });
  return Promise.race([p, lost]);
}

/** Reads back `count` f32s from element `offsetElems` (see unlessLost). */
export async function readF32(ctx: GpuContext, buf: GPUBuffer, count: number, offsetElems: number, doing: string): Promise<Float32Array> {
  return new Float32Array(await unlessLost(ctx, readBuffer(ctx, buf, count * 4, offsetElems * 4), doing));
}
