// Counts what the GPU really holds: wraps a device's createBuffer (and each buffer's destroy) so the bytes
// of live buffers, and their peak, are known independently of what any object reports about itself. Used
// by the benchmark (training memory) and by the memory test, which checks Qwen2Runtime.memory() against it.
// A buffer dropped without destroy() stays counted (and referenced): the GPU frees such buffers only when they
// are garbage-collected, at no knowable time. Compare totals taken around work that destroys what it made.

export interface BufferTotals {
  /** Live bytes of every buffer (storage, uniforms, read-back staging). */
  all: number;
  /** Live bytes of buffers with STORAGE usage (weights, activations, KV cache, samplers, trainer state). */
  storage: number;
  buffers: number;
}

const STORAGE = 0x80;

export class BufferTracker {
  private live = new Map<GPUBuffer, { size: number; storage: boolean }>();
  private totals: BufferTotals = { all: 0, storage: 0, buffers: 0 };
  private peakAll = 0;
  private readonly original: GPUDevice['createBuffer'];

  private constructor(private readonly device: GPUDevice) {
    this.original = device.createBuffer;
    const create = this.original.bind(device);
    device.createBuffer = (desc: GPUBufferDescriptor): GPUBuffer => {
      const buf = create(desc);
      const storage = (desc.usage & STORAGE) !== 0;
      this.live.set(buf, { size: buf.size, storage });
      this.totals.all += buf.size;
      if (storage) this.totals.storage += buf.size;
      this.totals.buffers++;
      this.peakAll = Math.max(this.peakAll, this.totals.all);
      const destroy = buf.destroy.bind(buf);
      // destroy() may be called more than once (it is idempotent in WebGPU); count the bytes once.
      buf.destroy = () => {
        this.forget(buf);
        destroy();
      };
      return buf;
    };
  }

  /** Starts counting every buffer `device` creates from now on (buffers made before are not seen). */
  static install(device: GPUDevice): BufferTracker {
    return new BufferTracker(device);
  }

  private forget(buf: GPUBuffer): void {
    const e = this.live.get(buf);
    if (!e) return;
    this.live.delete(buf);
    this.totals.all -= e.size;
    if (e.storage) this.totals.storage -= e.size;
    this.totals.buffers--;
  }

  /** Live bytes now. */
  now(): BufferTotals {
    return { ...this.totals };
  }

  /** Most bytes live at once since install() or the last resetPeak(). */
  get peak(): number {
    return this.peakAll;
  }

  resetPeak(): void {
    this.peakAll = this.totals.all;
  }

  /** Live bytes by label prefix (up to the first '.' or ':'), largest first: what a total is made of. */
  byLabel(): Array<{ label: string; bytes: number }> {
    const m = new Map<string, number>();
    for (const [b, e] of this.live) {
      const key = (b.label || '(no label)').split(/[.:[]/)[0];
      m.set(key, (m.get(key) ?? 0) + e.size);
    }
    return [...m].map(([label, bytes]) => ({ label, bytes })).sort((a, b) => b.bytes - a.bytes);
  }

  /** Puts the device's own createBuffer back (buffers already wrapped keep being counted on destroy). */
  uninstall(): void {
    this.device.createBuffer = this.original;
  }
}
