// Several LoRA adapters resident on the GPU next to one base model; one or none is active. Adapters are
// never merged into the base weights, so switching is a pointer change: no re-upload, no base reload,
// and the trainer can update A/B in place.
import type { GpuContext } from '../gpu/device';
import { assertDeviceAlive } from '../gpu/device';
import { createStorageChecked, writeBuffer } from '../gpu/buffers';
import type { Qwen2Config } from '../io/qwen2-config';
import { AdapterError, LORA_MODULES, MODULE_PATH, moduleShape, type LoraAdapter, type LoraModule } from '../io/peft';

export interface GpuLoraPair {
  /** f32 [r, in] */
  A: GPUBuffer;
  /** f32 [out, r] */
  B: GPUBuffer;
  r: number;
  scale: number;
  inFeatures: number;
  outFeatures: number;
}

export interface GpuAdapter {
  id: string;
  /** The host copy it was made from (config, and the values at load time). */
  source: LoraAdapter;
  /** layers[l][module], absent where the adapter leaves that module alone. */
  layers: Array<Partial<Record<LoraModule, GpuLoraPair>>>;
  /** Largest rank among its pairs. */
  maxRank: number;
  bytes: number;
  /**
   * Bumped by whoever rewrites its weights in place (the trainer's AdamW step), so anything computed with
   * older weights (the runtime's reusable KV-cache prefix) is known to be stale.
   */
  version: number;
}

export class AdapterSet {
  private readonly adapters = new Map<string, GpuAdapter>();
  private activeId: string | null = null;
  /** Called when the largest rank grows, so activation plans sized for the old rank are rebuilt. */
  onRankGrow?: (rank: number) => void;

  constructor(private readonly ctx: GpuContext, private readonly config: Qwen2Config) {}

  /**
   * Uploads `adapter` under `id` (replacing an adapter of the same id). Every pair is checked against
   * the base model's shapes, so an adapter made for another base fails here with the tensor named.
   */
  async add(id: string, adapter: LoraAdapter): Promise<GpuAdapter> {
    if (!id) throw new AdapterError('adapter id must be a non-empty string');
    assertDeviceAlive(this.ctx, `loading adapter '${id}'`);
    const layers: GpuAdapter['layers'] = Array.from({ length: this.config.numLayers }, () => ({}));
    const made: GPUBuffer[] = [];
    let bytes = 0;
    let maxRank = 0;
    try {
      for (const p of adapter.pairs.values()) {
        const where = `adapter '${id}' layer ${p.layer} ${MODULE_PATH[p.module]}`;
        if (p.layer < 0 || p.layer >= this.config.numLayers) {
          throw new AdapterError(`${where}: the base model has ${this.config.numLayers} layers (adapter made for another base)`);
        }
        const want = moduleShape(this.config, p.module);
        if (p.inFeatures !== want.inFeatures || p.outFeatures !== want.outFeatures) {
          throw new AdapterError(
            `${where}: LoRA is ${p.outFeatures}x${p.inFeatures} but the base layer is ${want.outFeatures}x${want.inFeatures} (adapter made for another base)`,
          );
        }
        if (p.A.length !== p.r * p.inFeatures || p.B.length !== p.outFeatures * p.r) {
          throw new AdapterError(`${where}: A/B lengths do not match r=${p.r}`);
        }
        const A = await createStorageChecked(this.ctx, `${id}.${p.layer}.${p.module}.lora_A`, p.A.byteLength);
        made.push(A);
        const B = await createStorageChecked(this.ctx, `${id}.${p.layer}.${p.module}.lora_B`, p.B.byteLength);
        made.push(B);
        writeBuffer(this.ctx, A, p.A);
        writeBuffer(this.ctx, B, p.B);
        bytes += A.size + B.size;
        maxRank = Math.max(maxRank, p.r);
        layers[p.layer][p.module] = { A, B, r: p.r, scale: p.scale, inFeatures: p.inFeatures, outFeatures: p.outFeatures };
      }
    } catch (e) {
      for (const b of made) b.destroy();
      throw e;
    }
    const old = this.adapters.get(id);
    const prevMax = this.maxRank();
    const gpu: GpuAdapter = { id, source: adapter, layers, maxRank, bytes, version: 0 };
    this.adapters.set(id, gpu);
    if (old) destroyAdapter(old);
    if (this.maxRank() > prevMax) this.onRankGrow?.(this.maxRank());
    return gpu;
  }

  /** Makes `id` the adapter every later forward uses; null for the base model alone. */
  activate(id: string | null): void {
    if (id !== null && !this.adapters.has(id)) {
      throw new AdapterError(`no adapter '${id}' is loaded (loaded: ${[...this.adapters.keys()].join(', ') || 'none'})`);
    }
    this.activeId = id;
  }

  get active(): GpuAdapter | null {
    return this.activeId === null ? null : (this.adapters.get(this.activeId) ?? null);
  }

  get activeIdOrNull(): string | null {
    return this.activeId;
  }

  get(id: string): GpuAdapter | undefined {
    return this.adapters.get(id);
  }

  ids(): string[] {
    return [...this.adapters.keys()];
  }

  remove(id: string): void {
    const a = this.adapters.get(id);
    if (!a) return;
    this.adapters.delete(id);
    if (this.activeId === id) this.activeId = null;
    destroyAdapter(a);
  }

  /** Largest rank of any loaded adapter (0 when none). */
  maxRank(): number {
    let r = 0;
    for (const a of this.adapters.values()) r = Math.max(r, a.maxRank);
    return r;
  }

  bytes(): number {
    let b = 0;
    for (const a of this.adapters.values()) b += a.bytes;
    return b;
  }

  destroy(): void {
    for (const a of this.adapters.values()) destroyAdapter(a);
    this.adapters.clear();
    this.activeId = null;
  }
}

function destroyAdapter(a: GpuAdapter): void {
  for (const l of a.layers) {
    for (const m of LORA_MODULES) {
      l[m]?.A.destroy();
      l[m]?.B.destroy();
    }
  }
}
