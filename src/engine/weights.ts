// Owns the base model's GPU weights: f16 matrices (the checkpoint's values rounded to half), f32 norms and
// biases. The embedding and an untied LM head are split into row chunks no larger than one storage
// binding (a Qwen2.5-0.5B embedding is 272 MiB in f16, over the 128 MiB many adapters allow).
import type { GpuContext } from '../gpu/device';
import { createStorageChecked, writeBuffer } from '../gpu/buffers';
import { assertDeviceAlive } from '../gpu/device';
import { checkWeights, type Qwen2Config } from './io/config';

/** One tensor of the checkpoint: io/checkpoint's TensorHandle, or a tensor made in memory. */
export interface TensorSource {
  name: string;
  shape: number[];
  /** IEEE half bits (BF16 / F32 rounded to nearest even). */
  f16(): Uint16Array;
  f32(): Float32Array;
}

/** Hugging Face tensor name -> tensor (io/checkpoint's `Checkpoint.tensors`). */
export type WeightSource = ReadonlyMap<string, TensorSource>;

export interface RowChunk {
  buffer: GPUBuffer;
  rowOffset: number;
  rowCount: number;
}

export interface LayerWeights {
  inputNorm: GPUBuffer;
  postNorm: GPUBuffer;
  q: GPUBuffer;
  qBias: GPUBuffer;
  k: GPUBuffer;
  kBias: GPUBuffer;
  v: GPUBuffer;
  vBias: GPUBuffer;
  o: GPUBuffer;
  gate: GPUBuffer;
  up: GPUBuffer;
  down: GPUBuffer;
}

export interface UploadProgress {
  tensor: string;
  done: number;
  total: number;
}

export interface UploadOptions {
  onProgress?: (p: UploadProgress) => void;
  /** Cap on one embedding / LM-head chunk below the binding limit (tests force chunking with it). */
  maxChunkBytes?: number;
}

/** Rows per chunk so that one chunk of a [rows, cols] f16 table fits in one storage binding. */
export function rowsPerChunk(ctx: GpuContext, cols: number, maxChunkBytes = Infinity): number {
  const limit = Math.min(ctx.caps.limits.maxStorageBufferBindingSize, ctx.caps.limits.maxBufferSize, maxChunkBytes);
  // Keep chunks a multiple of 2 rows so every chunk starts on a 4-byte boundary even for odd `cols`.
  const rows = Math.floor(limit / (cols * 2));
  return Math.max(1, rows - (rows % 2));
}

export class Qwen2Weights {
  private constructor(
    readonly config: Qwen2Config,
    readonly embed: RowChunk[],
    /** The LM head's chunks; the same objects as `embed` when the embedding is tied. */
    readonly head: RowChunk[],
    readonly layers: LayerWeights[],
    readonly finalNorm: GPUBuffer,
    /** GPU bytes held by this object. */
    readonly bytes: number,
    private readonly buffers: GPUBuffer[],
  ) {}

  /**
   * Checks `src` against `config` (names and shapes) and uploads it. A tied checkpoint that also carries
   * lm_head.weight uploads the embedding only, as Hugging Face ignores the copy.
   */
  static async upload(ctx: GpuContext, config: Qwen2Config, src: WeightSource, opts: UploadOptions = {}): Promise<Qwen2Weights> {
    const onProgress = opts.onProgress;
    checkWeights(config, src.values());
    assertDeviceAlive(ctx, 'uploading the model weights');
    const buffers: GPUBuffer[] = [];
    let bytes = 0;
    const total = 2 + config.numLayers * 12 + (config.tieWordEmbeddings ? 0 : 1);
    let done = 0;
    const tensor = (name: string) => src.get(name)!; // presence checked by checkWeights
    const step = (tensor: string) => onProgress?.({ tensor, done: ++done, total });
    try {
      const put = async (label: string, data: Uint16Array | Float32Array): Promise<GPUBuffer> => {
        const buf = await createStorageChecked(ctx, label, data.byteLength);
        buffers.push(buf);
        writeBuffer(ctx, buf, data);
        bytes += buf.size;
        return buf;
      };
      const half = async (name: string) => {
        const b = await put(name, tensor(name).f16());
        step(name);
        return b;
      };
      const single = async (name: string) => {
        const b = await put(name, tensor(name).f32());
        step(name);
        return b;
      };
      const chunked = async (name: string): Promise<RowChunk[]> => {
        const all = tensor(name).f16();
        const H = config.hiddenSize;
        const per = rowsPerChunk(ctx, H, opts.maxChunkBytes);
        const chunks: RowChunk[] = [];
        for (let r0 = 0; r0 < config.vocabSize; r0 += per) {
          const rowCount = Math.min(per, config.vocabSize - r0);
          const label = chunks.length === 0 && rowCount === config.vocabSize ? name : `${name}[rows ${r0}..${r0 + rowCount})`;
          chunks.push({ buffer: await put(label, all.subarray(r0 * H, (r0 + rowCount) * H)), rowOffset: r0, rowCount });
        }
        step(name);
        return chunks;
      };
      const embed = await chunked('model.embed_tokens.weight');
      const layers: LayerWeights[] = [];
      for (let l = 0; l < config.numLayers; l++) {
        const p = `model.layers.${l}.`;
        layers.push({
          inputNorm: await single(`${p}input_layernorm.weight`),
          postNorm: await single(`${p}post_attention_layernorm.weight`),
          q: await half(`${p}self_attn.q_proj.weight`),
          qBias: await single(`${p}self_attn.q_proj.bias`),
          k: await half(`${p}self_attn.k_proj.weight`),
          kBias: await single(`${p}self_attn.k_proj.bias`),
          v: await half(`${p}self_attn.v_proj.weight`),
          vBias: await single(`${p}self_attn.v_proj.bias`),
          o: await half(`${p}self_attn.o_proj.weight`),
          gate: await half(`${p}mlp.gate_proj.weight`),
          up: await half(`${p}mlp.up_proj.weight`),
          down: await half(`${p}mlp.down_proj.weight`),
        });
      }
      const finalNorm = await single('model.norm.weight');
      const head = config.tieWordEmbeddings ? embed : await chunked('lm_head.weight');
      return new Qwen2Weights(config, embed, head, layers, finalNorm, bytes, buffers);
    } catch (e) {
      for (const b of buffers) b.destroy();
      throw e;
    }
  }

  destroy(): void {
    for (const b of this.buffers) b.destroy();
    this.buffers.length = 0;
  }
}
