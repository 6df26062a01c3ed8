// Timing a kernel on its own in the benchmarks (the subgroup-matrix probe, the q4 kernel comparison of
// f16-check): `reps` dispatches in one compute pass, timestamped around the pass where the device has
// timestamp queries, else the wall time of the submission. An untimed pass of WARMUP_FACTOR x reps runs first
// in the same submission: on the H200 (2026-11-27) the same kernel timed 0.56 and 2.59 ms in two calls when
// the GPU came to it from idle (its clocks ramp up under sustained load).
export const WARMUP_FACTOR = 5;

/** Copies `bytes` of `src` into a mappable buffer and returns them. */
export async function readBack(device: GPUDevice, src: GPUBuffer, bytes: number): Promise<ArrayBuffer> {
  const dst = device.createBuffer({ size: bytes, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, bytes);
  device.queue.submit([enc.finish()]);
  await dst.mapAsync(GPUMapMode.READ);
  const copy = dst.getMappedRange().slice(0);
  dst.destroy();
  return copy;
}

/** Runs `reps` dispatches in one pass (after the warm-up pass), timed as timeDispatchList does. */
export function timeDispatches(device: GPUDevice, pipeline: GPUComputePipeline, bind: GPUBindGroup, grid: [number, number], reps: number): Promise<{ ms: number; method: 'timestamp' | 'wall' }> {
  return timeDispatchList(device, [{ pipeline, bind, grid }], reps);
}

/**
 * `reps` rounds of a list of dispatches (a split-K pair, say) in one pass, timestamped around the pass where the
 * device has timestamp queries, else the wall time of the submission; WARMUP_FACTOR x reps untimed rounds first.
 */
export async function timeDispatchList(device: GPUDevice, list: Array<{ pipeline: GPUComputePipeline; bind: GPUBindGroup; grid: readonly (number | undefined)[] }>, reps: number): Promise<{ ms: number; method: 'timestamp' | 'wall' }> {
  const ts = device.features.has('timestamp-query');
  const qs = ts ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolve = ts ? device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }) : null;
  const enc = device.createCommandEncoder();
  const rounds = (p: GPUComputePassEncoder, n: number): void => {
    for (let r = 0; r < n; r++) {
      for (const d of list) {
        p.setPipeline(d.pipeline);
        p.setBindGroup(0, d.bind);
        p.dispatchWorkgroups(d.grid[0] ?? 1, d.grid[1] ?? 1, d.grid[2] ?? 1);
      }
    }
  };
  const warm = enc.beginComputePass();
  rounds(warm, WARMUP_FACTOR * reps);
  warm.end();
  const pass = enc.beginComputePass(qs ? { timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
  rounds(pass, reps);
  pass.end();
  if (qs && resolve) enc.resolveQuerySet(qs, 0, 2, resolve, 0);
  const start = performance.now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  const wallMs = performance.now() - start;
  if (!qs || !resolve) return { ms: wallMs / reps, method: 'wall' };
  const t = new BigInt64Array(await readBack(device, resolve, 16));
  qs.destroy();
  resolve.destroy();
  const ns = Number(t[1] - t[0]);
  // A zero or negative span means the timestamps were not written: fall back to the wall clock.
  return ns > 0 ? { ms: ns / 1e6 / reps, method: 'timestamp' } : { ms: wallMs / reps, method: 'wall' };
}
