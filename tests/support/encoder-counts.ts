// Counts what command encoders record: wraps device.createCommandEncoder so each encoder whose label the
// caller asks about counts its compute dispatches and buffer copies. Used by the decode-loop tests and
// bench/decode-counts.ts to show that a change keeps the work per token.

/** What one encoder (or one label's encoders) recorded. */
export interface EncoderCount {
  dispatches: number;
  copies: number;
}

/**
 * From now on, every encoder whose label `counterFor` gives a counter for adds its dispatches and copies to
 * it (null: the encoder is left as it is). Returns the function that puts the device's own method back.
 */
export function countEncoders(device: GPUDevice, counterFor: (label: string) => EncoderCount | null): () => void {
  const real = device.createCommandEncoder.bind(device);
  device.createCommandEncoder = (d?: GPUCommandEncoderDescriptor) => {
    const enc = real(d);
    const count = counterFor(d?.label ?? '');
    if (!count) return enc;
    return {
      beginComputePass: (pd?: GPUComputePassDescriptor) => {
        const pass = enc.beginComputePass(pd);
        return {
          setPipeline: (p: GPUComputePipeline) => pass.setPipeline(p),
          setBindGroup: (i: number, g: GPUBindGroup) => pass.setBindGroup(i, g),
          dispatchWorkgroups: (x: number, y?: number, z?: number) => {
            count.dispatches++;
            pass.dispatchWorkgroups(x, y, z);
          },
          end: () => pass.end(),
        };
      },
      copyBufferToBuffer: (src: GPUBuffer, so: number, dst: GPUBuffer, dO: number, size: number) => {
        count.copies++;
        enc.copyBufferToBuffer(src, so, dst, dO, size);
      },
      clearBuffer: (b: GPUBuffer, o?: number, s?: number) => enc.clearBuffer(b, o, s),
      finish: (fd?: GPUCommandBufferDescriptor) => enc.finish(fd),
    } as unknown as GPUCommandEncoder;
  };
  return () => {
    device.createCommandEncoder = real;
  };
}
