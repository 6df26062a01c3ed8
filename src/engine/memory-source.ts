// Model files already in memory (bytes handed to the planner worker, or made by a test) as a FileSource.
import { MissingFileError, SourceError, type FileSource, type ProgressCallback } from '../io/sources';

export function memorySource(files: Record<string, Uint8Array>, label = 'in-memory files'): FileSource {
  const get = (name: string) => {
    const f = files[name];
    if (!f) throw new MissingFileError(name, label);
    return f;
  };
  return {
    label,
    list: async () => Object.keys(files).sort(),
    async readBytes(name: string, onProgress?: ProgressCallback) {
      const b = get(name);
      onProgress?.({ file: name, bytesDone: b.byteLength, bytesTotal: b.byteLength, fromCache: true });
      return b;
    },
    size: async (name: string) => get(name).byteLength,
    async readRange(name: string, start: number, end: number) {
      const f = get(name);
      if (start < 0 || end < start || end > f.byteLength) throw new SourceError(`${name} in ${label}: bytes [${start}, ${end}) lie outside its ${f.byteLength} bytes`);
      return f.subarray(start, end);
    },
    async readJson(name: string) {
      try {
        return JSON.parse(new TextDecoder().decode(get(name)));
      } catch (e) {
        if (e instanceof MissingFileError) throw e;
        throw new SourceError(`${name} in ${label} is not valid JSON (${(e as Error).message})`);
      }
    },
  };
}
