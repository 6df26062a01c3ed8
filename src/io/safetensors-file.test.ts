// Big safetensors files are read header first, then in slices of whole tensors: the slice plan at the
// scale of a 6 GB single-file f32 export, and the loader reading the tiny fixture in small slices.
import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readSafetensorsF32 } from '../../tests/support/qwen2-fixture.ts';
import { loadCheckpoint } from '../engine/load-checkpoint.ts';
import { expectedQwen2Tensors, parseQwen2Config } from './qwen2-config.ts';
import { planSlices, SLICE_BYTES } from './safetensors-file.ts';
import type { TensorDescriptor } from './safetensors.ts';
import { directorySource, type FileSource } from './sources.ts';
import type { LoadProgress } from './sources.ts';
import { TINY } from './test-fixtures.ts';

/** A source that logs every read: whole files and ranges. */
function logged(src: FileSource) {
  const reads: string[] = [];
  const source: FileSource = {
    ...src,
    readBytes: (name, p) => (reads.push(`${name} whole`), src.readBytes(name, p)),
    readRange: (name, a, b) => (reads.push(`${name} [${a}, ${b})`), src.readRange!(name, a, b)),
  };
  return { source, reads };
}

describe('safetensors slices', () => {
  it('plans a 6 GB f32 Qwen2.5-1.5B export as slices of whole tensors, none over the limit unless one tensor is', () => {
    const c = parseQwen2Config({
      hidden_size: 1536, num_hidden_layers: 28, num_attention_heads: 12, num_key_value_heads: 2, intermediate_size: 8960,
      vocab_size: 151936, tie_word_embeddings: false,
    });
    let at = 8 + 40_000;
    const tensors: TensorDescriptor[] = [...expectedQwen2Tensors(c)].map(([name, shape]) => {
      const byteLength = shape.reduce((a, b) => a * b, 1) * 4;
      const t = { name, dtype: 'F32' as const, shape, byteOffset: at, byteLength, file: 'model.safetensors' };
      at += byteLength;
      return t;
    });
    expect(at).toBeGreaterThan(6e9);
    const slices = planSlices(tensors, SLICE_BYTES);
    expect(slices.flatMap((s) => s.names)).toEqual(tensors.map((t) => t.name));
    const byName = new Map(tensors.map((t) => [t.name, t]));
    for (const s of slices) {
      const first = byName.get(s.names[0])!;
      const last = byName.get(s.names.at(-1)!)!;
      expect(s.start).toBe(first.byteOffset);
      expect(s.end).toBe(last.byteOffset + last.byteLength);
      if (s.names.length > 1) expect(s.end - s.start).toBeLessThanOrEqual(SLICE_BYTES);
    }
    // The 933 MB embedding and LM head are slices of their own; no slice nears 4 GiB.
    expect(slices.find((s) => s.names[0] === 'model.embed_tokens.weight')!.names).toEqual(['model.embed_tokens.weight']);
    expect(Math.max(...slices.map((s) => s.end - s.start))).toBe(151936 * 1536 * 4);
  });

  it('loads the fixture in 16 KiB slices: the same tensors, progress to the file size, never the whole file', async () => {
    const { source, reads } = logged(directorySource(TINY));
    const events: LoadProgress[] = [];
    const ck = await loadCheckpoint(source, { maxSliceBytes: 16 * 1024, onProgress: (p) => events.push(p) });
    const ref = readSafetensorsF32(join(TINY, 'model.safetensors'));
    for (const [name, r] of ref) expect(ck.tensors.get(name)!.f32(), name).toEqual(r.data);
    const ranges = reads.filter((r) => r.startsWith('model.safetensors'));
    expect(ranges).not.toContain('model.safetensors whole');
    expect(ranges.length).toBeGreaterThan(5);
    const size = statSync(join(TINY, 'model.safetensors')).size;
    const mine = events.filter((e) => e.file === 'model.safetensors');
    expect(mine.at(-1)).toEqual({ file: 'model.safetensors', bytesDone: size, bytesTotal: size, fromCache: false });
    expect(mine.every((e, i) => i === 0 || e.bytesDone >= mine[i - 1].bytesDone)).toBe(true);
    ck.release();
    expect(() => ck.tensors.get('model.norm.weight')!.f16()).toThrow(/checkpoint was released/);
  });

  it('checks the tensors against config.json from the header alone: no data is read for a mismatched config', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-slices-'));
    copyFileSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')), intermediate_size: 192 }));
    const { source, reads } = logged(directorySource(dir));
    await expect(loadCheckpoint(source, { maxSliceBytes: 16 * 1024 })).rejects.toThrow(/has shape \[176, 64\] but config\.json implies \[192, 64\]/);
    // The first 8 bytes, then the header: nothing of the data section.
    expect(reads.filter((r) => r.startsWith('model.safetensors'))).toHaveLength(2);
  });
});
