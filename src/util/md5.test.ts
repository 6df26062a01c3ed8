import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Md5, md5Hex } from './md5';
import { Rng } from './rng';

const text = (s: string) => new TextEncoder().encode(s);
const nodeMd5 = (b: Uint8Array) => createHash('md5').update(b).digest('hex');

describe('md5', () => {
  it("gives RFC 1321's test-suite digests", () => {
    const suite: Array<[string, string]> = [
      ['', 'd41d8cd98f00b204e9800998ecf8427e'],
      ['a', '0cc175b9c0f1b6a831c399e269772661'],
      ['abc', '900150983cd24fb0d6963f7d28e17f72'],
      ['message digest', 'f96b697d7cb7938d525a2f31aaf161d0'],
      ['abcdefghijklmnopqrstuvwxyz', 'c3fcd3d76192e4007dfb496cca67e13b'],
      ['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'd174ab98d277d9f5a5611c2c9f419d9f'],
      ['1234567890'.repeat(8), '57edf4a22be3c955ac49da2e2107b67a'],
    ];
    for (const [input, want] of suite) expect(md5Hex(text(input)), JSON.stringify(input)).toBe(want);
  });

  it('equals node:crypto for every length around the 55/56/64-byte padding edges', () => {
    const rng = new Rng(7);
    const bytes = Uint8Array.from({ length: 300 }, () => rng.int(256));
    for (let n = 0; n <= 300; n++) expect(md5Hex(bytes.subarray(0, n)), `${n} bytes`).toBe(nodeMd5(bytes.subarray(0, n)));
  });

  it('streams: any split into pieces, at aligned or unaligned offsets, gives the whole buffer\'s digest', () => {
    const rng = new Rng(11);
    const store = Uint8Array.from({ length: (1 << 20) + 77 }, () => rng.int(256));
    for (const shift of [0, 1, 2, 3]) {
      const data = store.subarray(shift, store.length - 3 + shift);
      const want = nodeMd5(data);
      expect(md5Hex(data)).toBe(want);
      const h = new Md5();
      for (let at = 0; at < data.length; ) {
        const n = Math.min(data.length - at, rng.int(3) === 0 ? rng.int(64) : rng.int(200_000));
        h.update(data.subarray(at, at + n));
        at += n;
      }
      expect(h.hex(), `shift ${shift}`).toBe(want);
      expect(h.hex()).toBe(want); // hex() is repeatable
      expect(() => h.update(data)).toThrow(/after hex/);
    }
  });
});
