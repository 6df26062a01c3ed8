import { describe, expect, it } from 'vitest';
import { readF32, uploadStorage, writeBuffer } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { emptyF32, randomHalf, u32Buffer } from '../common/testing';
import { embedding, validateTokenIds } from './embedding';
import { embeddingRef } from './embedding.ref';

describe('embedding kernel', async () => {
  const paths = await weightPaths();
  for (const path of paths) {
    for (const [V, H, N, chunks] of [[5, 3, 4, 1], [37, 17, 9, 3], [101, 64, 33, 4]] as const) {
      it(`${path}: V=${V} H=${H} N=${N} in ${chunks} chunk(s) equals the table rows, bad ids give zeros`, async () => {
        const ctx = await gpuFor(path);
        const rng = new Rng(V * 7 + H);
        const table = randomHalf(rng, V * H);
        const ids = Array.from({ length: N }, () => rng.int(V));
        ids[N - 1] = V + 5; // out of range: must be zeros, never an out-of-bounds read
        const idsBuf = u32Buffer(ctx, 'ids', ids);
        const x = emptyF32(ctx, 'x', N * H);
        // Poison x so that rows nobody wrote would show up.
        writeBuffer(ctx, x, new Float32Array(N * H).fill(12345));
        const per = Math.ceil(V / chunks);
        const dispatches = [];
        const bufs: GPUBuffer[] = [];
        for (let off = 0; off < V; off += per) {
          const rows = Math.min(per, V - off);
          // Each chunk is its own buffer, as the engine stores a table too large for one binding.
          const E = uploadStorage(ctx, `E${off}`, table.bits.subarray(off * H, (off + rows) * H));
          bufs.push(E);
          dispatches.push(await embedding(ctx, { E, ids: idsBuf, x, n: N, hidden: H, vocab: V, rowOffset: off, rowCount: rows }));
        }
        submitDispatches(ctx, dispatches);
        const got = await readF32(ctx, x, N * H);
        const want = embeddingRef(table.values, ids, H, V);
        // A gather: exact equality (f16 -> f32 is exact on both paths).
        expect(Array.from(got)).toEqual(Array.from(want));
        expect(got.some((v) => v !== 0)).toBe(true);
        for (const b of [...bufs, idsBuf, x]) b.destroy();
      });
    }
  }
  it('validateTokenIds names the bad id and position', () => {
    expect(() => validateTokenIds([1, 2, 99], 50)).toThrow(/id 99 at position 2/);
    expect(() => validateTokenIds([0, 49], 50)).not.toThrow();
  });
});
