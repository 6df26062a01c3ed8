// GPU memory of a planner at a given context (decode speed against the bandwidth floor: floor.ts).
import type { GpuContext } from '../src/gpu/device';
import type { Qwen2Config } from '../src/io/qwen2-config';
import { LORA_MODULES } from '../src/io/peft';
import { Qwen2Runtime, type GpuMemoryReport } from '../src/engine/runtime';
import type { Q4WeightSource, WeightSource } from '../src/model/weights';
import { initLoraAdapter } from '../src/trainer/lora-init';
import { Rng } from '../src/util/rng';
import type { BufferTracker } from './buffer-tracker';

const MiB = 2 ** 20;

export interface ContextMemory {
  /** KV cache rows (the runtime's maxContext). */
  context: number;
  /** Rows of one prefill chunk (maxBatchRows): the largest activation plan a generate() uses. */
  prefillRows: number;
  loraRank: number;
  loraTargets: readonly string[];
  /** What Qwen2Runtime.memory() reports after reserve(): weights, adapters, prefill + decode plans, KV cache. */
  bytes: GpuMemoryReport;
  totalBytes: number;
  totalMiB: number;
  /**
   * Cross-check by the device: the storage buffers the device gained for this runtime (counted by wrapping
   * createBuffer) minus the samplers' scratch, which memory() leaves out. Equal to totalBytes when the
   * report is whole.
   */
  deviceStorageBytes: number;
  samplerBytes: number;
}

/**
 * A fresh runtime with a KV cache of `context` rows and a rank-`rank` adapter on all seven targets (none for
 * rank 0), holding what a generate() at full context holds (Qwen2Runtime.reserve()); its report, checked
 * against the storage buffers the device gained meanwhile.
 */
export async function contextMemory(ctx: GpuContext, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, o: { context: number; batchRows: number; rank: number }, tracker: BufferTracker): Promise<ContextMemory> {
  // Buffers left from earlier runs (never destroyed, only unreferenced) are not this runtime's.
  const before = tracker.now().storage - samplers(tracker);
  const rt = await Qwen2Runtime.create(ctx, config, tensors, { maxContext: o.context, maxBatchRows: o.batchRows });
  try {
    if (o.rank > 0) {
      await rt.addAdapter('bench-memory', initLoraAdapter(config, { r: o.rank, alpha: 2 * o.rank }, new Rng(3)));
      rt.setActiveAdapter('bench-memory');
    }
    const bytes = await rt.reserve();
    const totalBytes = bytes.weights + bytes.adapters + bytes.activations + bytes.kvCache;
    const samplerBytes = samplers(tracker);
    return {
      context: rt.maxContext,
      prefillRows: rt.batchRows,
      loraRank: o.rank,
      loraTargets: o.rank > 0 ? LORA_MODULES : [],
      bytes,
      totalBytes,
      totalMiB: totalBytes / MiB,
      deviceStorageBytes: tracker.now().storage - samplerBytes - before,
      samplerBytes,
    };
  } finally {
    rt.destroy();
  }
}

const samplers = (t: BufferTracker) => t.byLabel().find((e) => e.label === 'sampler')?.bytes ?? 0;
