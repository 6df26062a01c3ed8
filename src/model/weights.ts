// Owns the base model's GPU weights: each matrix either in f16 (the checkpoint's values rounded to half) or,
// for a web-llm q4f16_1 / q4f32_1 download, as its 4-bit bytes (no f16 copy: the q4 kernels dequantize as
// they read, so the planner computes with exactly the values web-llm does); f32 norms and biases. The
// embedding and an untied LM head are split into row chunks no larger than one storage binding (a
// Qwen2.5-0.5B embedding is 272 MiB in f16, over the 128 MiB many adapters allow; in 4-bit it is 72 MiB).
import type { GpuContext } from '../gpu/device';
import { createStorageChecked, writeBuffer } from '../gpu/buffers';
import { submitDispatches } from '../gpu/pipelines';
import { assertDeviceAlive } from '../gpu/device';
import type { Q4Weight } from '../kernels/q4/q4weight';
import { q4DequantF16 } from '../kernels/q4/q4dequant';
import { checkWeights, type Qwen2Config } from '../io/qwen2-config';

/** One tensor of the checkpoint: io/checkpoint's TensorHandle, or a tensor made in memory. */
export interface TensorSource {
  name: string;
  shape: number[];
  /** IEEE half bits (BF16 / F32 rounded to nearest even). */
  f16(): Uint16Array;
  f32(): Float32Array;
}

/**
 * The tensors of a 4-bit MLC build under MLC names (io/mlc's MlcCheckpoint): fused `self_attn.c_attn`
 * (q, k, v rows, bias included) and `mlp.gate_up_proj` (gate rows, then up), `<name>.q_weight` /
 * `<name>.q_scale` per matrix, embedding quantized too.
 */
export interface Q4WeightSource {
  /** 'q4f16_1' (f16 scales) or 'q4f32_1' (f32 scales). */
  quantization: string;
  config: Qwen2Config;
  /** A record's data: q_weight as Uint32Array, q_scale as f16 bits (Uint16Array) or Float32Array. */
  raw(name: string): ArrayBufferView;
  /** A float record (norms, biases) as float32. */
  f32(name: string): Float32Array;
}

/**
 * Hugging Face tensor name -> tensor (io/checkpoint's `Checkpoint.tensors`). A map made from a 4-bit MLC
 * build also carries that build as `q4`, which `upload` uses instead of the dequantized tensors.
 */
export type WeightSource = ReadonlyMap<string, TensorSource> & { readonly q4?: Q4WeightSource };

function isQ4Source(src: WeightSource | Q4WeightSource): src is Q4WeightSource {
  return typeof (src as Partial<Q4WeightSource>).raw === 'function';
}

/** A frozen matrix: f16 bits in one buffer, or 4-bit (possibly a row window of a fused tensor's buffers). */
export type MatrixWeight = GPUBuffer | Q4Weight;

export function isQ4(w: MatrixWeight): w is Q4Weight {
  return (w as Partial<Q4Weight>).qWeight !== undefined;
}

export interface RowChunk {
  /** Rows rowOffset .. rowOffset+rowCount of the table, starting at row 0 of this weight. */
  weight: MatrixWeight;
  rowOffset: number;
  rowCount: number;
}

export interface LayerWeights {
  inputNorm: GPUBuffer;
  postNorm: GPUBuffer;
  q: MatrixWeight;
  qBias: GPUBuffer;
  k: MatrixWeight;
  kBias: GPUBuffer;
  v: MatrixWeight;
  vBias: GPUBuffer;
  o: MatrixWeight;
  gate: MatrixWeight;
  up: MatrixWeight;
  down: MatrixWeight;
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
  /** With a 4-bit source: upload its dequantized f16 tensors instead of the 4-bit bytes (comparisons). */
  dequantize?: boolean;
  /**
   * With a 4-bit source: also keep an f16 copy of each layer matrix (Q4Weight.f16, made on the GPU), which
   * the tensor-core matmuls read instead of dequantising every block (ops.linear). Default: where the device
   * was made with subgroup matrices, which is the only place they are read. Costs 2 bytes a weight (about
   * 0.7 GB for Qwen2.5-0.5B's layers); the embedding and LM head stay 4-bit.
   */
  f16Copies?: boolean;
}

/** Rows per chunk so that one chunk of a [rows, cols] f16 table fits in one storage binding. */
export function rowsPerChunk(ctx: GpuContext, cols: number, maxChunkBytes = Infinity, bytesPerElem = 2): number {
  const limit = Math.min(ctx.caps.limits.maxStorageBufferBindingSize, ctx.caps.limits.maxBufferSize, maxChunkBytes);
  // Keep chunks a multiple of 2 rows so every chunk starts on a 4-byte boundary even for odd `cols`.
  const rows = Math.floor(limit / (cols * bytesPerElem));
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
    /** Of `bytes`, the f16 copies of 4-bit matrices (UploadOptions.f16Copies): a decode never reads them. */
    readonly f16CopyBytes = 0,
  ) {}

  /** Bytes a decode step reads at most: every weight but the f16 copies (the bandwidth floors' measure). */
  get decodeBytes(): number {
    return this.bytes - this.f16CopyBytes;
  }

  /**
   * Checks `src` against `config` (names and shapes) and uploads it. A tied checkpoint that also carries
   * lm_head.weight uploads the embedding only, as Hugging Face ignores the copy. A 4-bit source (or a map
   * carrying one as `q4`) is uploaded 4-bit unless `opts.dequantize`.
   */
  static async upload(ctx: GpuContext, config: Qwen2Config, src: WeightSource | Q4WeightSource, opts: UploadOptions = {}): Promise<Qwen2Weights> {
    if (isQ4Source(src)) {
      if (opts.dequantize) throw new Error('dequantize: a bare 4-bit source has no dequantized tensors; pass the checkpoint\'s tensors map');
      return Qwen2Weights.uploadQ4(ctx, config, src, opts);
    }
    if (src.q4 && !opts.dequantize) return Qwen2Weights.uploadQ4(ctx, config, src.q4, opts);
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
          chunks.push({ weight: await put(label, all.subarray(r0 * H, (r0 + rowCount) * H)), rowOffset: r0, rowCount });
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

  /**
   * Uploads a 4-bit MLC build as it is: each q_weight / q_scale once, the fused c_attn and gate_up_proj
   * shared by their q/k/v and gate/up windows (`rowBase`), biases split per projection.
   */
  static async uploadQ4(ctx: GpuContext, config: Qwen2Config, src: Q4WeightSource, opts: UploadOptions = {}): Promise<Qwen2Weights> {
    const scale = src.quantization === 'q4f16_1' ? 'f16' : src.quantization === 'q4f32_1' ? 'f32' : null;
    if (!scale) throw new Error(`4-bit weights: quantization '${src.quantization}' is not supported (q4f16_1 or q4f32_1)`);
    const c = config;
    for (const k of ['hiddenSize', 'intermediateSize', 'numHeads', 'numKvHeads', 'headDim', 'numLayers', 'vocabSize', 'tieWordEmbeddings'] as const) {
      if (src.config[k] !== c[k]) throw new Error(`4-bit weights: the build's ${k} is ${src.config[k]} but the config says ${c[k]}`);
    }
    assertDeviceAlive(ctx, 'uploading the model weights');
    const H = c.hiddenSize;
    const qd = c.numHeads * c.headDim;
    const kvd = c.numKvHeads * c.headDim;
    const I = c.intermediateSize;
    const buffers: GPUBuffer[] = [];
    let bytes = 0;
    const total = 1 + c.numLayers * 4 + (c.tieWordEmbeddings ? 0 : 1);
    let done = 0;
    const step = (tensor: string) => opts.onProgress?.({ tensor, done: ++done, total });
    const put = async (label: string, data: ArrayBufferView): Promise<GPUBuffer> => {
      const buf = await createStorageChecked(ctx, label, data.byteLength);
      buffers.push(buf);
      writeBuffer(ctx, buf, data);
      bytes += buf.size;
      return buf;
    };
    // Typed and sized here, so a wrong build fails naming the tensor rather than in a kernel.
    const q4Arrays = (name: string, rows: number, inDim: number): { w: Uint32Array; s: Uint16Array | Float32Array } => {
      if (inDim % 32 !== 0) throw new Error(`4-bit weights: '${name}' has ${inDim} input features, not a multiple of 32`);
      const w = src.raw(`${name}.q_weight`);
      const s = src.raw(`${name}.q_scale`);
      if (!(w instanceof Uint32Array) || w.length !== (rows * inDim) / 8) {
        throw new Error(`4-bit weights: '${name}.q_weight' must be uint32 [${rows}, ${inDim / 8}], got ${w.constructor.name} of ${(w as Uint32Array).length ?? '?'} values`);
      }
      const want = scale === 'f16' ? Uint16Array : Float32Array;
      if (!(s instanceof want) || s.length !== (rows * inDim) / 32) {
        throw new Error(`4-bit weights: '${name}.q_scale' must be ${scale} [${rows}, ${inDim / 32}], got ${s.constructor.name} of ${(s as Uint16Array).length ?? '?'} values`);
      }
      return { w, s };
    };
    const copies = opts.f16Copies ?? ctx.caps.subgroupMatrix !== null;
    let copyBytes = 0;
    if (copies && !ctx.caps.f16) throw new Error('4-bit weights: f16 copies of the layer matrices need a device with shader-f16');
    const matrix = async (name: string, rows: number, inDim: number): Promise<Q4Weight> => {
      const { w, s } = q4Arrays(name, rows, inDim);
      const m: Q4Weight = { qWeight: await put(`${name}.q_weight`, w), qScale: await put(`${name}.q_scale`, s), scale };
      if (copies) {
        // The f16 copy the tensor-core matmuls read (ops.linear), filled on the GPU right after the upload.
        const f16 = await createStorageChecked(ctx, `${name}.f16`, rows * inDim * 2);
        buffers.push(f16);
        submitDispatches(ctx, [await q4DequantF16(ctx, m, rows, inDim, f16)]);
        bytes += f16.size;
        copyBytes += f16.size;
        m.f16 = f16;
      }
      step(name);
      return m;
    };
    const vector = async (name: string, n: number, parts?: number[]): Promise<GPUBuffer[]> => {
      const v = src.f32(name);
      if (v.length !== n) throw new Error(`4-bit weights: '${name}' has ${v.length} values, expected ${n}`);
      const out: GPUBuffer[] = [];
      let at = 0;
      for (const len of parts ?? [n]) {
        out.push(await put(parts ? `${name}[${at}..${at + len})` : name, v.subarray(at, at + len)));
        at += len;
      }
      return out;
    };
    const table = async (name: string): Promise<RowChunk[]> => {
      const { w, s } = q4Arrays(name, c.vocabSize, H);
      // q_weight is the larger of the two buffers (half a byte per value); its size sets the chunk rows.
      const per = rowsPerChunk(ctx, H, opts.maxChunkBytes, 0.5);
      const chunks: RowChunk[] = [];
      for (let r0 = 0; r0 < c.vocabSize; r0 += per) {
        const n = Math.min(per, c.vocabSize - r0);
        const label = n === c.vocabSize ? name : `${name}[rows ${r0}..${r0 + n})`;
        const weight: Q4Weight = {
          qWeight: await put(`${label}.q_weight`, w.subarray((r0 * H) / 8, ((r0 + n) * H) / 8)),
          qScale: await put(`${label}.q_scale`, s.subarray((r0 * H) / 32, ((r0 + n) * H) / 32)),
          scale,
        };
        chunks.push({ weight, rowOffset: r0, rowCount: n });
      }
      step(name);
      return chunks;
    };
    try {
      const embed = await table('model.embed_tokens');
      const layers: LayerWeights[] = [];
      for (let l = 0; l < c.numLayers; l++) {
        const p = `model.layers.${l}.`;
        const [inputNorm] = await vector(`${p}input_layernorm.weight`, H);
        const [postNorm] = await vector(`${p}post_attention_layernorm.weight`, H);
        const qkv = await matrix(`${p}self_attn.c_attn`, qd + 2 * kvd, H);
        const [qBias, kBias, vBias] = await vector(`${p}self_attn.c_attn.bias`, qd + 2 * kvd, [qd, kvd, kvd]);
        const gateUp = await matrix(`${p}mlp.gate_up_proj`, 2 * I, H);
        layers.push({
          inputNorm,
          postNorm,
          q: { ...qkv, rowBase: 0 },
          qBias,
          k: { ...qkv, rowBase: qd },
          kBias,
          v: { ...qkv, rowBase: qd + kvd },
          vBias,
          o: await matrix(`${p}self_attn.o_proj`, H, qd),
          gate: { ...gateUp, rowBase: 0 },
          up: { ...gateUp, rowBase: I },
          down: await matrix(`${p}mlp.down_proj`, H, I),
        });
      }
      const [finalNorm] = await vector('model.norm.weight', H);
      const head = c.tieWordEmbeddings ? embed : await table('lm_head');
      return new Qwen2Weights(config, embed, head, layers, finalNorm, bytes, buffers, copyBytes);
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
