// A forward pass recorded once as a list of steps (kernel dispatches and buffer copies) and re-encoded
// for every call. Values that change per call (ids, positions, ranges) live in storage buffers the
// steps read, so only copy offsets are computed at encode time, from the EncodeInputs the caller passes
// to encodeSteps (the KV-cache row being written, the first row of a logits chunk).
import type { GpuContext } from '../gpu/device';
import type { Dispatch } from '../gpu/pipelines';

export type Step =
  | { kind: 'dispatch'; d: Dispatch }
  | { kind: 'copy'; src: GPUBuffer; srcOffset: Offset; dst: GPUBuffer; dstOffset: Offset; size: number };

/**
 * What a step list is told when it is encoded rather than when it is recorded: the rows this call works on.
 * Each is read only by steps recorded to read it; a step that reads one the caller left out throws.
 */
export interface EncodeInputs {
  /** The KV-cache row the first row's K/V go to (a prefill chunk, a decode step of one sequence). */
  cacheRow?: number;
  /** A batch decode step: row r's K/V go to cache row cacheRows[r]. */
  cacheRows?: readonly number[];
  /** The first row of a logits / logprob chunk. */
  row0?: number;
}

/** A byte offset, fixed or computed from the encode inputs (e.g. the KV-cache row of this decode step). */
export type Offset = number | ((inputs: EncodeInputs) => number);

/** The input `name` the steps being encoded read, or an error naming it when the caller left it out. */
export function encodeInput(inputs: EncodeInputs, name: 'cacheRow' | 'row0'): number {
  const v = inputs[name];
  if (v === undefined) throw new Error(`encodeSteps: the steps read the encode input '${name}', which the caller did not pass`);
  return v;
}

/** Row r's entry of the cacheRows input (see encodeInput). */
export function cacheRowInput(inputs: EncodeInputs, r: number): number {
  const v = inputs.cacheRows?.[r];
  if (v === undefined) throw new Error(`encodeSteps: the steps read row ${r} of the encode input 'cacheRows', which the caller did not pass`);
  return v;
}

// Bind groups depend only on the pipeline and the buffers, which a recorded Dispatch never changes.
const bindGroups = new WeakMap<Dispatch, GPUBindGroup>();

function bindGroupFor(ctx: GpuContext, d: Dispatch): GPUBindGroup {
  let bg = bindGroups.get(d);
  if (!bg) {
    bg = ctx.device.createBindGroup({
      label: d.label ?? d.pipeline.label,
      layout: d.pipeline.getBindGroupLayout(0),
      entries: d.buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    bindGroups.set(d, bg);
  }
  return bg;
}

/**
 * Encodes `steps` into `enc`. Consecutive dispatches share one compute pass (WebGPU orders dispatches in
 * a pass, and storage writes are visible to later dispatches); copies close the pass. `inputs` give the
 * offsets the steps compute at encode time.
 */
export function encodeSteps(ctx: GpuContext, enc: GPUCommandEncoder, steps: Step[], inputs: EncodeInputs = {}): void {
  const at = (o: Offset) => (typeof o === 'number' ? o : o(inputs));
  let pass: GPUComputePassEncoder | null = null;
  for (const s of steps) {
    if (s.kind === 'dispatch') {
      pass ??= enc.beginComputePass({ label: 'forward' });
      pass.setPipeline(s.d.pipeline);
      pass.setBindGroup(0, bindGroupFor(ctx, s.d));
      const [x, y = 1, z = 1] = s.d.workgroups;
      pass.dispatchWorkgroups(x, y, z);
    } else {
      if (pass) {
        pass.end();
        pass = null;
      }
      const srcOffset = at(s.srcOffset);
      const dstOffset = at(s.dstOffset);
      // Inference plans alias some buffers (e.g. the next layer's x is this layer's x): nothing to copy.
      if (s.src === s.dst && srcOffset === dstOffset) continue;
      enc.copyBufferToBuffer(s.src, srcOffset, s.dst, dstOffset, s.size);
    }
  }
  pass?.end();
}

export function dispatchStep(d: Dispatch): Step {
  return { kind: 'dispatch', d };
}

export function copyStep(src: GPUBuffer, dst: GPUBuffer, size: number, dstOffset: Offset = 0, srcOffset: Offset = 0): Step {
  return { kind: 'copy', src, srcOffset, dst, dstOffset, size };
}
