// web-llm / MLC model folders: tensor-cache.json (formerly ndarray-cache.json) + params_shard_N.bin +
// mlc-chat-config.json, and a CPU dequantizer for q4f16_1 / q4f32_1 weights (the runtime itself keeps
// the 4-bit bytes: see model/weights.ts uploadQ4).
//
// Manifest format, as the tvmjs runtime bundled in @mlc-ai/web-llm 0.2.86 reads it
// (node_modules/@mlc-ai/web-llm/lib/index.js: getTensorCacheRecordBytes, loadTensorCacheRecordData,
// fetchTensorCacheInternal): {"metadata": {...}, "records": [{dataPath, format: "raw-shard", nbytes, md5sum?,
// records: [{name, shape, dtype, format, nbytes, byteOffset}]}]}, byteOffset relative to its shard. The
// per-tensor format "f32-to-bf16" only changes the bytes when dtype is float32 (then stored as bf16, 2 bytes
// per element); other dtypes are stored raw whatever the format says.
//
// q4f16_1 (mlc-llm python/mlc_llm/quantization/group_quantization.py, GroupQuantize with int4 in uint32,
// group_size 32, linear_weight_layout "NK"): q_weight uint32 [out, in/8], element j of a word in bits
// 4j..4j+3; q_scale float16 [out, in/32]; max_int_value = 2^(4-1) - 1 = 7 and _dequantize computes
// (q - 7) * scale. Embeddings are quantized the same way along the hidden axis.
import { AgentFlowError, type ErrorCategory } from '../errors';
import { f16BitsToF32, bf16BitsToF32 } from '../util/half.ts';
import { checkLayerCount, parseQwen2Config, type Qwen2Config } from './qwen2-config.ts';
import { md5Hex } from '../util/md5.ts';
import { isModelFileName, MODEL_FILE_NAME_RULE } from './file-names.ts';
import { firstNonFiniteBf16, firstNonFiniteF32, firstNonFiniteHalf, nonFiniteError } from './finite.ts';
import { readOptionalJson, type FileSource, type ProgressCallback } from './sources.ts';

export const MLC_MANIFEST_FILES = ['tensor-cache.json', 'ndarray-cache.json'] as const;

export type MlcDtype = 'uint32' | 'float16' | 'float32' | 'bfloat16' | 'int32' | 'uint8' | 'int8';
const ITEM: Record<MlcDtype, number> = { uint32: 4, float16: 2, float32: 4, bfloat16: 2, int32: 4, uint8: 1, int8: 1 };

export interface MlcRecord {
  name: string;
  shape: number[];
  dtype: MlcDtype;
  format: 'raw' | 'f32-to-bf16';
  nbytes: number;
  /** Offset within its shard. */
  byteOffset: number;
  dataPath: string;
}

export interface MlcShard {
  dataPath: string;
  nbytes: number;
  md5sum?: string;
}

export interface MlcManifest {
  file: string;
  records: Map<string, MlcRecord>;
  shards: MlcShard[];
  metadata: Record<string, unknown>;
}

export class MlcFormatError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-model-file';
  constructor(message: string) {
    super(message);
    this.name = 'MlcFormatError';
  }
}

/** A shard whose bytes are not what tensor-cache.json says (size or md5sum): a damaged download or cache. */
export class CorruptShardError extends MlcFormatError {
  override readonly category: ErrorCategory = 'corrupt-file';
  constructor(
    message: string,
    readonly file: string,
    /** True when the source's stored copy was deleted, so the next load downloads the shard again. */
    readonly forgotten: boolean,
  ) {
    super(message);
    this.name = 'CorruptShardError';
  }
}

const prod = (s: number[]) => s.reduce((a, b) => a * b, 1);

/** Parses and validates tensor-cache.json: sizes match shapes, records lie inside their shard, no overlaps. */
export function parseTensorCache(json: unknown, file = 'tensor-cache.json'): MlcManifest {
  const root = json as { records?: unknown; metadata?: unknown } | null;
  if (!root || !Array.isArray(root.records)) throw new MlcFormatError(`${file}: missing 'records' list`);
  const records = new Map<string, MlcRecord>();
  const shards: MlcShard[] = [];
  for (const [si, s] of (root.records as Array<Record<string, unknown>>).entries()) {
    const dataPath = s.dataPath;
    if (!isModelFileName(dataPath)) {
      throw new MlcFormatError(`${file}: shard ${si} has dataPath ${JSON.stringify(dataPath)}, not ${MODEL_FILE_NAME_RULE}; refused`);
    }
    if (s.format !== 'raw-shard') throw new MlcFormatError(`${file}: shard ${dataPath} has format ${JSON.stringify(s.format)}, expected 'raw-shard'`);
    const nbytes = s.nbytes;
    if (!Number.isSafeInteger(nbytes) || (nbytes as number) < 0) throw new MlcFormatError(`${file}: shard ${dataPath} has invalid nbytes`);
    if (!Array.isArray(s.records)) throw new MlcFormatError(`${file}: shard ${dataPath} has no 'records'`);
    const md5sum = s.md5sum;
    if (md5sum !== undefined && (typeof md5sum !== 'string' || !/^[0-9a-fA-F]{32}$/.test(md5sum))) {
      throw new MlcFormatError(`${file}: shard ${dataPath} has md5sum ${JSON.stringify(md5sum)}, not 32 hex digits`);
    }
    shards.push({ dataPath, nbytes: nbytes as number, md5sum: md5sum?.toLowerCase() });
    const inShard: MlcRecord[] = [];
    for (const r of s.records as Array<Record<string, unknown>>) {
      const name = r.name;
      if (typeof name !== 'string') throw new MlcFormatError(`${file}: a record in ${dataPath} has no name`);
      const where = `${file}: tensor '${name}'`;
      if (records.has(name)) throw new MlcFormatError(`${where} appears twice`);
      const dtype = r.dtype as MlcDtype;
      if (!(typeof dtype === 'string' && dtype in ITEM)) throw new MlcFormatError(`${where}: dtype ${JSON.stringify(r.dtype)} is not supported`);
      const format = r.format ?? 'raw';
      if (format !== 'raw' && format !== 'f32-to-bf16') throw new MlcFormatError(`${where}: format ${JSON.stringify(format)} is not supported`);
      const shape = r.shape;
      if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new MlcFormatError(`${where}: bad shape ${JSON.stringify(shape)}`);
      const off = r.byteOffset;
      const nb = r.nbytes;
      if (!Number.isSafeInteger(off) || (off as number) < 0 || !Number.isSafeInteger(nb) || (nb as number) < 0) {
        throw new MlcFormatError(`${where}: bad byteOffset/nbytes`);
      }
      const packedBf16 = format === 'f32-to-bf16' && dtype === 'float32';
      const want = prod(shape as number[]) * (packedBf16 ? 2 : ITEM[dtype]);
      if (nb !== want) throw new MlcFormatError(`${where}: shape [${(shape as number[]).join(', ')}] × ${dtype}${packedBf16 ? ' (as bf16)' : ''} is ${want} bytes but nbytes is ${nb}`);
      if ((off as number) + (nb as number) > (nbytes as number)) {
        throw new MlcFormatError(`${where}: bytes ${off}..${(off as number) + (nb as number)} run past the ${nbytes}-byte shard ${dataPath}`);
      }
      const rec: MlcRecord = { name, shape: shape as number[], dtype, format, nbytes: nb as number, byteOffset: off as number, dataPath };
      records.set(name, rec);
      inShard.push(rec);
    }
    inShard.sort((a, b) => a.byteOffset - b.byteOffset);
    for (let i = 1; i < inShard.length; i++) {
      const p = inShard[i - 1];
      if (inShard[i].byteOffset < p.byteOffset + p.nbytes) throw new MlcFormatError(`${file}: tensor '${inShard[i].name}' overlaps '${p.name}' in ${dataPath}`);
    }
  }
  const metadata = root.metadata && typeof root.metadata === 'object' ? (root.metadata as Record<string, unknown>) : {};
  return { file, records, shards, metadata };
}

export interface MlcChatConfig {
  quantization: string;
  modelType: string;
  /** The model dimensions, in the same form a Hugging Face config.json gives. */
  config: Qwen2Config;
  contextWindowSize: number;
  tokenizerFiles: string[];
  raw: Record<string, unknown>;
}

/** Reads mlc-chat-config.json (model_config holds the Hugging Face-style dimensions). */
export function parseMlcChatConfig(json: unknown, file = 'mlc-chat-config.json'): MlcChatConfig {
  const c = json as Record<string, unknown> | null;
  if (!c || typeof c !== 'object') throw new MlcFormatError(`${file}: not a JSON object`);
  const mc = c.model_config as Record<string, unknown> | undefined;
  if (!mc || typeof mc !== 'object') throw new MlcFormatError(`${file}: missing 'model_config'`);
  if (c.model_type !== 'qwen2') throw new MlcFormatError(`${file}: 'model_type' is ${JSON.stringify(c.model_type)}; only qwen2 is supported`);
  const config = parseQwen2Config(
    {
      ...mc,
      model_type: 'qwen2',
      max_position_embeddings: mc.context_window_size ?? c.context_window_size,
      bos_token_id: c.bos_token_id,
      eos_token_id: c.eos_token_id,
      torch_dtype: mc.dtype,
    },
    file,
  );
  return {
    quantization: String(c.quantization ?? ''),
    modelType: 'qwen2',
    config,
    contextWindowSize: Number(c.context_window_size ?? config.maxPositionEmbeddings),
    tokenizerFiles: Array.isArray(c.tokenizer_files) ? (c.tokenizer_files as string[]) : [],
    raw: c,
  };
}

/** The 4-bit MLC quantizations the planner reads: q4f16_1 (f16 scales and norms) and q4f32_1 (f32). */
export const MLC_Q4_QUANTIZATIONS = ['q4f16_1', 'q4f32_1'] as const;
export type MlcQ4Quantization = (typeof MLC_Q4_QUANTIZATIONS)[number];

/**
 * Names and shapes a q4f16_1 (or q4f32_1) Qwen2 MLC build holds (q/k/v fused as c_attn, gate/up as
 * gate_up_proj).
 */
export function expectedMlcQwen2Tensors(c: Qwen2Config, quantization: MlcQ4Quantization = 'q4f16_1'): Map<string, { shape: number[]; dtype: MlcDtype }> {
  const floatDtype: MlcDtype = quantization === 'q4f32_1' ? 'float32' : 'float16';
  const h = c.hiddenSize;
  const qkv = (c.numHeads + 2 * c.numKvHeads) * c.headDim;
  const qo = c.numHeads * c.headDim;
  const I = c.intermediateSize;
  const m = new Map<string, { shape: number[]; dtype: MlcDtype }>();
  const quant = (name: string, out: number, inF: number) => {
    m.set(`${name}.q_weight`, { shape: [out, inF / 8], dtype: 'uint32' });
    m.set(`${name}.q_scale`, { shape: [out, inF / 32], dtype: floatDtype });
  };
  const f16 = (name: string, n: number) => m.set(name, { shape: [n], dtype: floatDtype });
  quant('model.embed_tokens', c.vocabSize, h);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}`;
    f16(`${p}.input_layernorm.weight`, h);
    quant(`${p}.self_attn.c_attn`, qkv, h);
    f16(`${p}.self_attn.c_attn.bias`, qkv);
    quant(`${p}.self_attn.o_proj`, h, qo);
    f16(`${p}.post_attention_layernorm.weight`, h);
    quant(`${p}.mlp.gate_up_proj`, 2 * I, h);
    quant(`${p}.mlp.down_proj`, h, I);
  }
  f16('model.norm.weight', h);
  if (!c.tieWordEmbeddings) quant('lm_head', c.vocabSize, h);
  return m;
}

/** Throws, naming the tensor, unless the manifest holds every q4 Qwen2 tensor the config implies. */
export function checkMlcQwen2(manifest: MlcManifest, config: Qwen2Config, quantization: MlcQ4Quantization = 'q4f16_1'): void {
  checkLayerCount(config, manifest.records.keys(), 'mlc-chat-config.json');
  for (const [name, want] of expectedMlcQwen2Tensors(config, quantization)) {
    const r = manifest.records.get(name);
    if (!r) throw new MlcFormatError(`${manifest.file}: missing tensor '${name}' that the config implies`);
    if (r.dtype !== want.dtype || r.shape.length !== want.shape.length || r.shape.some((d, i) => d !== want.shape[i])) {
      throw new MlcFormatError(`${manifest.file}: tensor '${name}' is ${r.dtype} [${r.shape.join(', ')}] but the config implies ${want.dtype} [${want.shape.join(', ')}]`);
    }
  }
}

export type MlcArray = Uint32Array | Uint16Array | Float32Array | Int32Array | Uint8Array | Int8Array;

/**
 * A record's data from its shard's bytes: uint32 as Uint32Array, float16 as f16 bits, float32 as
 * Float32Array. A float record (scales, norms, biases) holding a NaN or infinity throws NonFiniteError.
 */
export function readMlcRecord(shard: Uint8Array, rec: MlcRecord): MlcArray {
  if (rec.byteOffset + rec.nbytes > shard.byteLength) {
    throw new MlcFormatError(`${rec.dataPath}: tensor '${rec.name}' needs bytes up to ${rec.byteOffset + rec.nbytes} but the shard has ${shard.byteLength} (truncated)`);
  }
  const bytes = shard.slice(rec.byteOffset, rec.byteOffset + rec.nbytes); // copy: aligned and detached from the shard
  const n = prod(rec.shape);
  const finite = <T extends Uint16Array | Float32Array>(a: T, bad: number, value: (i: number) => number): T => {
    if (bad >= 0) throw nonFiniteError(rec.dataPath, rec.name, rec.shape, bad, value(bad));
    return a;
  };
  if (rec.dtype === 'float32' && rec.format === 'f32-to-bf16') {
    const src = new Uint16Array(bytes.buffer, 0, n);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = bf16BitsToF32(src[i]);
    return finite(out, firstNonFiniteF32(out), (i) => out[i]);
  }
  switch (rec.dtype) {
    case 'uint32':
      return new Uint32Array(bytes.buffer, 0, n);
    case 'int32':
      return new Int32Array(bytes.buffer, 0, n);
    case 'float16': {
      const h = new Uint16Array(bytes.buffer, 0, n);
      return finite(h, firstNonFiniteHalf(h), (i) => f16BitsToF32(h[i]));
    }
    case 'bfloat16': {
      const b = new Uint16Array(bytes.buffer, 0, n);
      return finite(b, firstNonFiniteBf16(b), (i) => bf16BitsToF32(b[i]));
    }
    case 'float32': {
      const f = new Float32Array(bytes.buffer, 0, n);
      return finite(f, firstNonFiniteF32(f), (i) => f[i]);
    }
    case 'uint8':
      return new Uint8Array(bytes.buffer, 0, n);
    case 'int8':
      return new Int8Array(bytes.buffer, 0, n);
  }
}

/**
 * Dequantizes a q4f16_1 weight: qWeight [out, in/8] uint32, qScale [out, in/32] f16 bits -> float32
 * [out, in] row-major, value = (q - 7) * scale with q the 4-bit field j of word k at bits 4j..4j+3 for
 * input column 8k + j.
 */
export function dequantizeQ4f16_1(qWeight: Uint32Array, qScale: Uint16Array, out: number, inFeatures: number): Float32Array {
  return dequantizeQ4(qWeight, qScale, out, inFeatures);
}

/** dequantizeQ4f16_1 for either scale dtype: f16 bits (q4f16_1) or float32 (q4f32_1). */
export function dequantizeQ4(qWeight: Uint32Array, qScale: Uint16Array | Float32Array, out: number, inFeatures: number): Float32Array {
  const scaleAt = qScale instanceof Float32Array ? (i: number) => qScale[i] : (i: number) => f16BitsToF32(qScale[i]);
  if (inFeatures % 32 !== 0) throw new MlcFormatError(`q4f16_1 needs in_features divisible by 32, got ${inFeatures}`);
  const words = inFeatures / 8;
  const groups = inFeatures / 32;
  if (qWeight.length !== out * words) throw new MlcFormatError(`q_weight has ${qWeight.length} words, expected ${out} × ${words}`);
  if (qScale.length !== out * groups) throw new MlcFormatError(`q_scale has ${qScale.length} values, expected ${out} × ${groups}`);
  const res = new Float32Array(out * inFeatures);
  for (let o = 0; o < out; o++) {
    for (let k = 0; k < words; k++) {
      const w = qWeight[o * words + k];
      const scale = scaleAt(o * groups + (k >> 2));
      const base = o * inFeatures + k * 8;
      for (let j = 0; j < 8; j++) res[base + j] = (((w >>> (4 * j)) & 0xf) - 7) * scale;
    }
  }
  return res;
}

/** Splits a row-major [sum(rows), cols] matrix (or a vector when cols is 1) into consecutive row blocks. */
export function splitRows(data: Float32Array, cols: number, rows: number[]): Float32Array[] {
  const total = rows.reduce((a, b) => a + b, 0);
  if (data.length !== total * cols) throw new MlcFormatError(`cannot split ${data.length} values into rows [${rows.join(', ')}] × ${cols}`);
  const out: Float32Array[] = [];
  let r0 = 0;
  for (const r of rows) {
    out.push(data.slice(r0 * cols, (r0 + r) * cols));
    r0 += r;
  }
  return out;
}

export interface MlcCheckpoint {
  chat: MlcChatConfig;
  config: Qwen2Config;
  quantization: MlcQ4Quantization;
  manifest: MlcManifest;
  /** A record's raw data (see readMlcRecord). */
  raw(name: string): MlcArray;
  /** A quantized linear (or the embedding) dequantized to float32 [out, in]: `prefix` without .q_weight. */
  dequantized(prefix: string): Float32Array;
  /** A float16 record (norms, biases) as float32. */
  f32(name: string): Float32Array;
  release(): void;
}

/** Throws CorruptShardError for `file`, first deleting the source's stored copy of it when it keeps one. */
async function corrupt(source: FileSource, file: string, what: string): Promise<never> {
  const forgotten = (await source.forget?.(file).catch(() => false)) ?? false;
  const remedy = forgotten
    ? 'The stored copy was deleted: load the model again to download it afresh.'
    : source.forget
      ? 'Load the model again to download it afresh.'
      : 'Replace it with a fresh download of the build.';
  throw new CorruptShardError(`${file} in ${source.label} is corrupt: it ${what}. ${remedy}`, file, forgotten);
}

/**
 * Reads an MLC q4f16_1 / q4f32_1 Qwen2 folder (manifest, chat config and every shard) from any FileSource.
 * `onNote` hears, once, of shards the manifest gives no md5sum for (read unchecked: mlc-llm always writes
 * one, so a missing hash is worth a word).
 */
export async function loadMlcCheckpoint(source: FileSource, opts: { onProgress?: ProgressCallback; onNote?: (note: string) => void } = {}): Promise<MlcCheckpoint> {
  let manifestJson: unknown = null;
  let manifestFile = '';
  for (const f of MLC_MANIFEST_FILES) {
    manifestJson = await readOptionalJson(source, f);
    if (manifestJson) {
      manifestFile = f;
      break;
    }
  }
  if (!manifestJson) throw new MlcFormatError(`${source.label}: no tensor-cache.json or ndarray-cache.json`);
  const manifest = parseTensorCache(manifestJson, manifestFile);
  const chat = parseMlcChatConfig(await source.readJson('mlc-chat-config.json'), 'mlc-chat-config.json');
  const quantization = MLC_Q4_QUANTIZATIONS.find((q) => q === chat.quantization);
  if (!quantization) throw new MlcFormatError(`mlc-chat-config.json: quantization '${chat.quantization}' is not supported (only ${MLC_Q4_QUANTIZATIONS.join(', ')})`);
  checkMlcQwen2(manifest, chat.config, quantization);
  const shards = new Map<string, Uint8Array | null>();
  for (const s of manifest.shards) {
    const bytes = await source.readBytes(s.dataPath, opts.onProgress);
    if (bytes.byteLength !== s.nbytes) await corrupt(source, s.dataPath, `is ${bytes.byteLength} bytes but ${manifestFile} says ${s.nbytes}`);
    // The bytes are hashed where they lie (no second copy); the planner loads in its worker, off the page's thread.
    if (s.md5sum) {
      const md5 = md5Hex(bytes);
      if (md5 !== s.md5sum) await corrupt(source, s.dataPath, `has MD5 ${md5} but ${manifestFile} lists ${s.md5sum}`);
    }
    shards.set(s.dataPath, bytes);
  }
  const unchecked = manifest.shards.filter((s) => !s.md5sum).map((s) => s.dataPath);
  if (unchecked.length) {
    const names = unchecked.length > 3 ? `${unchecked.slice(0, 3).join(', ')}, ...` : unchecked.join(', ');
    opts.onNote?.(`${manifestFile} in ${source.label} lists no md5sum for ${unchecked.length} of ${manifest.shards.length} shard(s) (${names}): they were loaded without an integrity check`);
  }
  const rec = (name: string) => {
    const r = manifest.records.get(name);
    if (!r) throw new MlcFormatError(`${manifestFile}: no tensor '${name}'`);
    return r;
  };
  const raw = (name: string) => {
    const r = rec(name);
    const bytes = shards.get(r.dataPath);
    if (!bytes) throw new MlcFormatError(`tensor '${name}': checkpoint was released`);
    return readMlcRecord(bytes, r);
  };
  return {
    chat,
    config: chat.config,
    quantization,
    manifest,
    raw,
    dequantized(prefix) {
      const w = rec(`${prefix}.q_weight`);
      const qw = raw(`${prefix}.q_weight`) as Uint32Array;
      const qs = raw(`${prefix}.q_scale`) as Uint16Array | Float32Array;
      return dequantizeQ4(qw, qs, w.shape[0], w.shape[1] * 8);
    },
    f32(name) {
      const r = rec(name);
      const a = raw(name);
      if (a instanceof Float32Array) return a;
      if (r.dtype !== 'float16' || !(a instanceof Uint16Array)) throw new MlcFormatError(`tensor '${name}' is ${r.dtype}, not a float tensor`);
      const out = new Float32Array(a.length);
      for (let i = 0; i < a.length; i++) out[i] = f16BitsToF32(a[i]);
      return out;
    },
    release() {
      for (const k of shards.keys()) shards.set(k, null);
    },
  };
}
