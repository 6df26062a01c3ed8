// A safetensors file of a FileSource as the checkpoint loader holds it. A file larger than one slice is
// read header first, then its tensor data in slices of whole tensors, on sources that can read ranges
// (folders, picked files, bytes in memory): no single buffer holds it all, so a 6 GB f32 export of a 1.5B
// model loads where one Uint8Array of its size cannot be made, and the loader can check the tensor list
// against the config before reading any data. Smaller files, and sources that download whole files (URLs,
// whose files go to Cache Storage whole), are read at once.
import { parseSafetensorsHeader, readHeaderLength, SafetensorsError, type SafetensorsHeader, type TensorDescriptor } from './safetensors.ts';
import type { FileSource, ProgressCallback } from './sources.ts';

/** Default largest slice: a few per big checkpoint, each far below any engine's typed-array limit. */
export const SLICE_BYTES = 256 * 2 ** 20;

export interface SafetensorsData {
  header: SafetensorsHeader;
  /** Reads the tensor data (nothing left to read when the whole file was read for its header). */
  load(): Promise<void>;
  /** The bytes holding `t`, and `t` with its offset into them. */
  locate(t: TensorDescriptor): { bytes: Uint8Array; tensor: TensorDescriptor };
  /** Drops the bytes; locate() fails afterwards. */
  release(): void;
}

export interface Slice {
  /** Absolute byte range in the file. */
  start: number;
  end: number;
  names: string[];
}

/**
 * Consecutive tensors grouped into slices of at most `maxBytes` (a tensor larger than that is a slice of
 * its own), in file order.
 */
export function planSlices(tensors: Iterable<TensorDescriptor>, maxBytes: number): Slice[] {
  const sorted = [...tensors].sort((a, b) => a.byteOffset - b.byteOffset);
  const out: Slice[] = [];
  let cur: Slice | null = null;
  for (const t of sorted) {
    const end = t.byteOffset + t.byteLength;
    if (cur && end - cur.start <= maxBytes) {
      cur.end = end;
      cur.names.push(t.name);
    } else {
      cur = { start: t.byteOffset, end, names: [t.name] };
      out.push(cur);
    }
  }
  return out;
}

export interface OpenOptions {
  onProgress?: ProgressCallback;
  /** Largest slice (tests make it small to read the tiny fixture in slices). */
  maxSliceBytes?: number;
}

/** Opens `file`: its header only when it will be read in slices, else the whole file. */
export async function openSafetensors(source: FileSource, file: string, opts: OpenOptions = {}): Promise<SafetensorsData> {
  const maxSlice = opts.maxSliceBytes ?? SLICE_BYTES;
  const size = source.readRange && source.size ? await source.size(file) : null;
  if (size === null || size <= maxSlice) return wholeFile(await source.readBytes(file, opts.onProgress), file);
  const readRange = source.readRange!.bind(source);
  const progress = (bytesDone: number) => opts.onProgress?.({ file, bytesDone, bytesTotal: size, fromCache: false });
  progress(0);
  const n = readHeaderLength(await readRange(file, 0, Math.min(8, size)), file);
  if (8 + n > size) throw new SafetensorsError(`${file}: header length ${n} runs past the end of the ${size}-byte file (truncated download?)`);
  const header = parseSafetensorsHeader(await readRange(file, 0, 8 + n), file, size);
  progress(8 + n);
  const slices = planSlices(header.tensors.values(), maxSlice);
  const sliceOf = new Map<string, number>();
  slices.forEach((s, i) => s.names.forEach((name) => sliceOf.set(name, i)));
  const bytes: Array<Uint8Array | null> = slices.map(() => null);
  let released = false;
  return {
    header,
    async load() {
      for (const [i, s] of slices.entries()) {
        if (released) throw new SafetensorsError(`${file}: released while loading`);
        bytes[i] = await readRange(file, s.start, s.end);
        progress(s.end);
      }
      progress(size);
    },
    locate(t) {
      const i = sliceOf.get(t.name);
      const b = i === undefined ? null : bytes[i];
      if (!b) throw new SafetensorsError(`tensor '${t.name}': ${released ? 'checkpoint was released' : `${file} is not loaded yet`}`);
      return { bytes: b, tensor: { ...t, byteOffset: t.byteOffset - slices[i!].start } };
    },
    release() {
      released = true;
      bytes.fill(null);
    },
  };
}

function wholeFile(data: Uint8Array, file: string): SafetensorsData {
  let bytes: Uint8Array | null = data;
  const header = parseSafetensorsHeader(data, file);
  return {
    header,
    load: async () => undefined,
    locate(t) {
      if (!bytes) throw new SafetensorsError(`tensor '${t.name}': checkpoint was released`);
      return { bytes, tensor: t };
    },
    release() {
      bytes = null;
    },
  };
}
