// Reader and writer for the safetensors format (https://github.com/huggingface/safetensors, "Format"):
// 8-byte little-endian header length N, N bytes of UTF-8 JSON {name: {dtype, shape, data_offsets:[begin,end]},
// "__metadata__"?: {string: string}}, then the data section; data_offsets are relative to the data section.
import { AgentFlowError, type ErrorCategory } from '../errors';
import { bf16BitsToF32, f16BitsToF32, f32ToF16Bits } from '../util/half.ts';
import { firstNonFiniteF32, firstNonFiniteHalf, nonFiniteError } from './finite.ts';

export type SafetensorsDtype = 'BF16' | 'F16' | 'F32';

const ITEM_SIZE: Record<SafetensorsDtype, number> = { BF16: 2, F16: 2, F32: 4 };

export interface TensorDescriptor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte offset of the tensor's first byte in its file. */
  byteOffset: number;
  byteLength: number;
  /** File the tensor lives in (a shard name for sharded checkpoints). */
  file: string;
}

export interface SafetensorsHeader {
  file: string;
  /** Tensors in header order. */
  tensors: Map<string, TensorDescriptor>;
  metadata?: Record<string, string>;
  /** Absolute offset of the data section (8 + header length). */
  dataOffset: number;
}

export class SafetensorsError extends AgentFlowError {
  override readonly category: ErrorCategory = 'bad-model-file';
  constructor(message: string) {
    super(message);
    this.name = 'SafetensorsError';
  }
}

// The Rust implementation caps headers at 100 MB; a larger length means a corrupt or non-safetensors file.
const MAX_HEADER = 100_000_000;

/** Reads the header length from the first 8 bytes; callers fetching by range use it to size the next read. */
export function readHeaderLength(first8: Uint8Array, file: string): number {
  if (first8.byteLength < 8) throw new SafetensorsError(`${file}: file is ${first8.byteLength} bytes, too short for a safetensors header`);
  const dv = new DataView(first8.buffer, first8.byteOffset, 8);
  const n = dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32;
  if (n > MAX_HEADER) throw new SafetensorsError(`${file}: header length ${n} is implausibly large (not a safetensors file?)`);
  return n;
}

function product(shape: number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Parses and validates the header of a safetensors file. `bytes` must hold at least the first 8 + N bytes;
 * `fileSize` is the whole file's size (checked against every tensor's extent).
 */
export function parseSafetensorsHeader(bytes: Uint8Array, file: string, fileSize = bytes.byteLength): SafetensorsHeader {
  const n = readHeaderLength(bytes, file);
  if (8 + n > fileSize) {
    throw new SafetensorsError(`${file}: header length ${n} runs past the end of the ${fileSize}-byte file (truncated download?)`);
  }
  if (8 + n > bytes.byteLength) throw new SafetensorsError(`${file}: only ${bytes.byteLength} bytes given, header needs ${8 + n}`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw new SafetensorsError(`${file}: header is not valid UTF-8 JSON (${(e as Error).message})`);
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new SafetensorsError(`${file}: header is not a JSON object`);
  const dataOffset = 8 + n;
  const dataSize = fileSize - dataOffset;
  const tensors = new Map<string, TensorDescriptor>();
  let metadata: Record<string, string> | undefined;
  for (const [name, raw] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new SafetensorsError(`${file}: __metadata__ must be an object of strings`);
      for (const [k, v] of Object.entries(raw)) {
        if (typeof v !== 'string') throw new SafetensorsError(`${file}: __metadata__.${k} must be a string, got ${typeof v}`);
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    const info = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const where = `${file}: tensor '${name}'`;
    if (!info || typeof info !== 'object') throw new SafetensorsError(`${where}: entry is not an object`);
    if (typeof info.dtype !== 'string') throw new SafetensorsError(`${where}: missing dtype`);
    if (!(info.dtype in ITEM_SIZE)) {
      throw new SafetensorsError(`${where}: dtype ${info.dtype} is not supported (only BF16, F16, F32)`);
    }
    const dtype = info.dtype as SafetensorsDtype;
    const shape = info.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(`${where}: shape ${JSON.stringify(shape)} is not a list of non-negative integers`);
    }
    const off = info.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(`${where}: data_offsets ${JSON.stringify(off)} is not [begin, end]`);
    }
    const [begin, end] = off as [number, number];
    if (end < begin) throw new SafetensorsError(`${where}: data_offsets [${begin}, ${end}] end before begin`);
    if (end > dataSize) {
      throw new SafetensorsError(
        `${where}: data_offsets [${begin}, ${end}] run past the ${dataSize}-byte data section (file truncated or corrupt)`,
      );
    }
    const item = ITEM_SIZE[dtype];
    if (begin % item !== 0) throw new SafetensorsError(`${where}: data offset ${begin} is not aligned to its ${item}-byte ${dtype} elements`);
    const expected = product(shape as number[]) * item;
    if (end - begin !== expected) {
      throw new SafetensorsError(
        `${where}: shape [${(shape as number[]).join(', ')}] × ${dtype} is ${expected} bytes but data_offsets span ${end - begin}`,
      );
    }
    tensors.set(name, { name, dtype, shape: shape as number[], byteOffset: dataOffset + begin, byteLength: end - begin, file });
  }
  // Overlap check: sorted by start, each tensor must begin at or after the previous one's end.
  const sorted = [...tensors.values()].filter((t) => t.byteLength > 0).sort((a, b) => a.byteOffset - b.byteOffset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    const cur = sorted[i];
    if (cur.byteOffset < prev.byteOffset + prev.byteLength) {
      throw new SafetensorsError(`${file}: tensor '${cur.name}' overlaps tensor '${prev.name}' in the data section`);
    }
  }
  return { file, tensors, metadata, dataOffset };
}

/** The tensor's bytes; a copy only when the source offset is not aligned for a typed-array view. */
function tensorBytes(bytes: Uint8Array, t: TensorDescriptor): { buffer: ArrayBufferLike; offset: number } {
  if (t.byteOffset + t.byteLength > bytes.byteLength) {
    throw new SafetensorsError(`${t.file}: tensor '${t.name}' needs bytes up to ${t.byteOffset + t.byteLength} but only ${bytes.byteLength} are present (truncated)`);
  }
  const abs = bytes.byteOffset + t.byteOffset;
  if (abs % 4 === 0) return { buffer: bytes.buffer, offset: abs };
  const copy = bytes.slice(t.byteOffset, t.byteOffset + t.byteLength);
  return { buffer: copy.buffer, offset: 0 };
}

const conv32 = new Float32Array(1);
const conv32u = new Uint32Array(conv32.buffer);

/**
 * The tensor as IEEE half bits; BF16 and F32 are rounded to nearest even. Throws NonFiniteError, naming
 * the tensor and element, on a NaN or infinity, or on a value beyond f16's range (it would be one on the
 * GPU): checked in the conversion loop, or by one scan of the copy for F16.
 */
export function tensorToF16(bytes: Uint8Array, t: TensorDescriptor): Uint16Array {
  const { buffer, offset } = tensorBytes(bytes, t);
  const n = t.byteLength / ITEM_SIZE[t.dtype];
  if (t.dtype === 'F16') {
    const out = new Uint16Array(buffer, offset, n).slice();
    const bad = firstNonFiniteHalf(out);
    if (bad >= 0) throw nonFiniteError(t.file, t.name, t.shape, bad, f16BitsToF32(out[bad]));
    return out;
  }
  const out = new Uint16Array(n);
  if (t.dtype === 'F32') {
    const src = new Float32Array(buffer, offset, n);
    for (let i = 0; i < n; i++) {
      const h = f32ToF16Bits(src[i]);
      if ((h & 0x7c00) === 0x7c00) throw nonFiniteError(t.file, t.name, t.shape, i, src[i], Number.isFinite(src[i]));
      out[i] = h;
    }
    return out;
  }
  const src = new Uint16Array(buffer, offset, n);
  for (let i = 0; i < n; i++) {
    // bf16 widens to f32 exactly (its bits are the top half of an f32).
    conv32u[0] = src[i] << 16;
    const h = f32ToF16Bits(conv32[0]);
    if ((h & 0x7c00) === 0x7c00) throw nonFiniteError(t.file, t.name, t.shape, i, conv32[0], Number.isFinite(conv32[0]));
    out[i] = h;
  }
  return out;
}

/** The tensor as float32 (exact for all three dtypes). Throws NonFiniteError on a NaN or infinity. */
export function tensorToF32(bytes: Uint8Array, t: TensorDescriptor): Float32Array {
  const { buffer, offset } = tensorBytes(bytes, t);
  const n = t.byteLength / ITEM_SIZE[t.dtype];
  if (t.dtype === 'F32') {
    const out = new Float32Array(buffer, offset, n).slice();
    const bad = firstNonFiniteF32(out);
    if (bad >= 0) throw nonFiniteError(t.file, t.name, t.shape, bad, out[bad]);
    return out;
  }
  const src = new Uint16Array(buffer, offset, n);
  const out = new Float32Array(n);
  const badBits = t.dtype === 'F16' ? 0x7c00 : 0x7f80;
  const widen = t.dtype === 'F16' ? f16BitsToF32 : bf16BitsToF32;
  for (let i = 0; i < n; i++) {
    out[i] = widen(src[i]);
    if ((src[i] & badBits) === badBits) throw nonFiniteError(t.file, t.name, t.shape, i, out[i]);
  }
  return out;
}

export interface SafetensorsFile {
  header: SafetensorsHeader;
  names(): string[];
  descriptor(name: string): TensorDescriptor;
  f16(name: string): Uint16Array;
  f32(name: string): Float32Array;
}

/** Parses a whole safetensors file held in memory. */
export function readSafetensors(data: Uint8Array | ArrayBuffer, file: string): SafetensorsFile {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const header = parseSafetensorsHeader(bytes, file);
  const descriptor = (name: string) => {
    const t = header.tensors.get(name);
    if (!t) throw new SafetensorsError(`${file}: no tensor named '${name}'`);
    return t;
  };
  return {
    header,
    names: () => [...header.tensors.keys()],
    descriptor,
    f16: (name) => tensorToF16(bytes, descriptor(name)),
    f32: (name) => tensorToF32(bytes, descriptor(name)),
  };
}

export type WritableTensor =
  | { name: string; shape: number[]; data: Float32Array; dtype?: 'F32' }
  | { name: string; shape: number[]; data: Uint16Array; dtype: 'F16' | 'BF16' };

/**
 * Serializes tensors (in the order given) to safetensors bytes. The header is padded with spaces to a
 * multiple of 8 bytes, as the reference implementation does, so every tensor's data stays aligned.
 */
export function writeSafetensors(tensors: WritableTensor[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new SafetensorsError(`__metadata__.${k} must be a string`);
    }
    header.__metadata__ = metadata;
  }
  let offset = 0;
  const seen = new Set<string>();
  for (const t of tensors) {
    if (t.name === '__metadata__' || seen.has(t.name)) throw new SafetensorsError(`tensor name '${t.name}' is reserved or duplicated`);
    seen.add(t.name);
    const dtype = t.dtype ?? 'F32';
    const n = product(t.shape);
    if (n !== t.data.length) {
      throw new SafetensorsError(`tensor '${t.name}': shape [${t.shape.join(', ')}] has ${n} elements but data has ${t.data.length}`);
    }
    const size = n * ITEM_SIZE[dtype];
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + size] };
    offset += size;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const out = new Uint8Array(8 + padded + offset);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, padded, true);
  dv.setUint32(4, Math.floor(padded / 2 ** 32), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.byteLength, 8 + padded);
  let pos = 8 + padded;
  for (const t of tensors) {
    const src = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    out.set(src, pos);
    pos += src.byteLength;
  }
  return out;
}
