// A module worker that owns its own GPU context and answers over comlink. The page uses it to check
// that WebGPU works off the main thread, where the planner engine runs.
import * as Comlink from 'comlink';
import { getGpu } from '../src/gpu/device';
import type { GpuCapabilities } from '../src/gpu/device';
import { createStorage, readF32, uploadStorage } from '../src/gpu/buffers';
import { submitDispatches } from '../src/gpu/pipelines';
import { matvec } from '../src/kernels/matvec/matvec';
import type { GpuProbeApi } from '../src/gpu/probe-protocol';

const api: GpuProbeApi = {
  async capabilities(): Promise<GpuCapabilities> {
    return (await getGpu()).caps;
  },
  async matvec(Wbits: Uint16Array, x: Float32Array, rows: number, cols: number): Promise<Float32Array> {
    const ctx = await getGpu();
    const W = uploadStorage(ctx, 'probe.W', Wbits);
    const xb = uploadStorage(ctx, 'probe.x', x);
    const y = createStorage(ctx, 'probe.y', rows * 4);
    submitDispatches(ctx, [await matvec(ctx, { W, x: xb, y, rows, cols })]);
    const out = await readF32(ctx, y, rows);
    W.destroy();
    xb.destroy();
    y.destroy();
    return Comlink.transfer(out, [out.buffer]);
  },
};

Comlink.expose(api);
