// Copies of the tiny fixtures with one thing broken (a NaN in a weight, a flipped byte in a shard), written
// to a fresh temporary folder, for the loaders' error tests. Edits go through the files' own layouts (the
// safetensors header, tensor-cache.json), not through src/io, so a loader bug cannot hide itself.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY, TINY_MLC } from './qwen2-fixture';

export { TINY_MLC };

function copyDir(src: string, dst: string): void {
  mkdirSync(dst, { recursive: true });
  for (const f of readdirSync(src, { withFileTypes: true })) {
    if (f.isDirectory()) copyDir(join(src, f.name), join(dst, f.name));
    else copyFileSync(join(src, f.name), join(dst, f.name));
  }
}

/** A writable copy of `src` (default: the qwen2-tiny fixture) in a new temporary folder. */
export function copyFixture(src = TINY, prefix = 'agentflow-damaged-'): string {
  const dir = join(mkdtempSync(join(tmpdir(), prefix)), 'model');
  copyDir(src, dir);
  return dir;
}

/** Overwrites element `index` of safetensors tensor `name` in `file` with `bits` (its dtype's raw bits). */
export function setSafetensorsElement(file: string, name: string, index: number, bits: number): void {
  const b = readFileSync(file);
  const n = Number(b.readBigUInt64LE(0));
  const t = (JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; data_offsets: [number, number] }>)[name];
  if (!t) throw new Error(`${file} has no tensor '${name}'`);
  const at = 8 + n + t.data_offsets[0];
  if (t.dtype === 'F32') b.writeUInt32LE(bits >>> 0, at + 4 * index);
  else b.writeUInt16LE(bits, at + 2 * index);
  writeFileSync(file, b);
}

interface ManifestJson {
  records: Array<{ dataPath: string; md5sum?: string; records: Array<{ name: string; byteOffset: number; dtype: string }> }>;
}

/**
 * Overwrites element `index` of MLC record `name` (a 2-byte float) with `bits`; with `keepMd5`, the
 * shard's md5sum in tensor-cache.json is updated to the new bytes (a consistent build with a bad value).
 */
export function setMlcElement(dir: string, name: string, index: number, bits: number, keepMd5 = true): void {
  const manifestFile = join(dir, 'tensor-cache.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as ManifestJson;
  const shard = manifest.records.find((s) => s.records.some((r) => r.name === name));
  if (!shard) throw new Error(`${manifestFile} has no record '${name}'`);
  const rec = shard.records.find((r) => r.name === name)!;
  const file = join(dir, shard.dataPath);
  const bytes = readFileSync(file);
  bytes.writeUInt16LE(bits, rec.byteOffset + 2 * index);
  writeFileSync(file, bytes);
  if (keepMd5) {
    shard.md5sum = createHash('md5').update(bytes).digest('hex');
    writeFileSync(manifestFile, JSON.stringify(manifest));
  }
}

/** Flips one bit of byte `at` of `file` (a shard whose md5sum no longer matches). */
export function flipByte(file: string, at: number): void {
  const bytes = readFileSync(file);
  bytes[at] ^= 0x10;
  writeFileSync(file, bytes);
}
