import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSafetensorsHeader, readSafetensors, writeSafetensors, tensorToF16 } from './safetensors.ts';
import { NonFiniteError } from './finite.ts';
import { f32ToBf16Bits } from '../util/half.ts';
import { TINY } from './test-fixtures.ts';

// Independent float64 reference for IEEE half rounding (nearest, ties to even), written from the format
// definition rather than bit tricks, so it does not share a bug with src/util/half.ts.
function refF16Bits(x: number): number {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // 65520 is the midpoint between max half 65504 and 2^16
  let e = Math.floor(Math.log2(a || 2 ** -30));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  e = Math.max(e, -14);
  const ulp = 2 ** (e - 10);
  const q = a / ulp;
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && r % 2 === 1)) r++;
  if (r === 0) return sign;
  if (e === -14 && r < 1024) return sign | r; // subnormal
  if (r === 2048) {
    r = 1024;
    e++;
  }
  if (e + 15 >= 31) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | (r - 1024);
}

const file = join(TINY, 'model.safetensors');
const raw = new Uint8Array(readFileSync(file));

function rawHeader(bytes: Uint8Array): { n: number; json: Record<string, any> } {
  const n = Number(Buffer.from(bytes.buffer, bytes.byteOffset, 8).readBigUInt64LE(0));
  return { n, json: JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8')) };
}

function withHeader(json: unknown, dataBytes: number, pad = true): Uint8Array {
  let text = JSON.stringify(json);
  if (pad) while (text.length % 8) text += ' ';
  const h = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + h.length + dataBytes);
  new DataView(out.buffer).setUint32(0, h.length, true);
  out.set(h, 8);
  return out;
}

describe('safetensors reader', () => {
  it('reads the BF16 fixture: every tensor equals an independent decode, as f32 and as RNE f16', () => {
    const st = readSafetensors(raw, 'model.safetensors');
    const { n, json } = rawHeader(raw);
    const names = Object.keys(json).filter((k) => k !== '__metadata__');
    expect(st.names()).toEqual(names);
    expect(st.header.metadata).toEqual({ format: 'pt' });
    const buf = Buffer.from(raw);
    let checked = 0;
    for (const name of names) {
      const t = json[name];
      const d = st.descriptor(name);
      expect(d.dtype).toBe('BF16');
      expect(d.shape).toEqual(t.shape);
      const f32 = st.f32(name);
      const f16 = st.f16(name);
      const count = t.shape.reduce((a: number, b: number) => a * b, 1);
      expect(f32.length).toBe(count);
      const want32 = new Float32Array(count);
      const want16 = new Uint16Array(count);
      const word = Buffer.alloc(4);
      for (let i = 0; i < count; i++) {
        word.writeUInt32LE((buf.readUInt16LE(8 + n + t.data_offsets[0] + 2 * i) << 16) >>> 0);
        want32[i] = word.readFloatLE(0);
        want16[i] = refF16Bits(want32[i]);
      }
      // Compare as whole arrays: one assertion per tensor keeps the test fast.
      expect(Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).equals(Buffer.from(want32.buffer)), name).toBe(true);
      expect(Buffer.from(f16.buffer, f16.byteOffset, f16.byteLength).equals(Buffer.from(want16.buffer)), name).toBe(true);
      checked += count;
    }
    expect(checked).toBeGreaterThan(50_000);
  });

  it('converts F32 to f16 bits with round-to-nearest-even, including ties, subnormals and the top of the range', () => {
    const vals: number[] = [0, -0, 1, -1, 65504, 65519.99, -65519.99, 2 ** -24, 2 ** -25, 3 * 2 ** -26, 2 ** -14, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 0.1, -3.14159];
    let s = 12345;
    for (let i = 0; i < 4000; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      vals.push(((s / 2 ** 32) - 0.5) * 2 ** ((i % 40) - 26));
    }
    const data = new Float32Array(vals);
    const bytes = writeSafetensors([{ name: 'x', shape: [data.length], data }]);
    const st = readSafetensors(bytes, 'x.safetensors');
    const f16 = st.f16('x');
    const mismatches = [...data].map((v, i) => [v, f16[i], refF16Bits(v)]).filter(([, got, want]) => got !== want);
    expect(mismatches).toEqual([]);
    expect(st.f32('x')).toEqual(data);
  });

  it('reads F16 tensors and works on a tensor at an odd absolute offset', () => {
    const bits = new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001]);
    const bytes = writeSafetensors([{ name: 'h', shape: [2, 2], data: bits, dtype: 'F16' }]);
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    const st = readSafetensors(shifted.subarray(1), 'h.safetensors');
    expect([...st.f16('h')]).toEqual([...bits]);
    expect([...st.f32('h')]).toEqual([1, -2, 65504, 2 ** -24]);
  });

  it('rejects other dtypes, naming the file and tensor', () => {
    const b = withHeader({ w: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, 8);
    expect(() => readSafetensors(b, 'odd.safetensors')).toThrow(/odd\.safetensors: tensor 'w': dtype I64 is not supported/);
  });

  it('rejects a header length beyond the file', () => {
    const b = withHeader({}, 0);
    new DataView(b.buffer).setUint32(0, 4096, true);
    expect(() => readSafetensors(b, 'short.safetensors')).toThrow(/short\.safetensors: header length 4096 runs past the end/);
  });

  it('rejects out-of-range, overlapping, misaligned and mis-sized data_offsets, naming the tensor', () => {
    const bad = (json: unknown, size: number) => () => readSafetensors(withHeader(json, size), 'f.safetensors');
    expect(bad({ a: { dtype: 'F32', shape: [4], data_offsets: [0, 16] } }, 8)).toThrow(/f\.safetensors: tensor 'a': data_offsets \[0, 16\] run past/);
    expect(
      bad({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, 12),
    ).toThrow(/tensor 'b' overlaps tensor 'a'/);
    expect(bad({ a: { dtype: 'F32', shape: [1], data_offsets: [2, 6] } }, 8)).toThrow(/tensor 'a': data offset 2 is not aligned/);
    expect(bad({ a: { dtype: 'BF16', shape: [3, 2], data_offsets: [0, 8] } }, 8)).toThrow(/tensor 'a': shape \[3, 2\] × BF16 is 12 bytes but data_offsets span 8/);
  });

  it('rejects a truncated file, naming the tensor that runs off the end', () => {
    const cut = raw.subarray(0, raw.length - 100);
    expect(() => readSafetensors(cut, 'model.safetensors')).toThrow(/model\.safetensors: tensor '[^']+': data_offsets .* run past/);
    const { n } = rawHeader(raw);
    expect(() => parseSafetensorsHeader(raw.subarray(0, n), 'model.safetensors')).toThrow(/header length \d+ runs past the end/);
  });
});

describe('non-finite weights', () => {
  const one = (dtype: 'F32' | 'F16' | 'BF16', values: number[], shape = [values.length]) => {
    const bytes =
      dtype === 'F32'
        ? writeSafetensors([{ name: 'w', shape, data: new Float32Array(values) }])
        : writeSafetensors([{ name: 'w', shape, data: Uint16Array.from(values, (v) => (dtype === 'F16' ? refF16Bits(v) : f32ToBf16Bits(v))), dtype }]);
    return readSafetensors(bytes, 'bad.safetensors');
  };

  for (const dtype of ['F32', 'F16', 'BF16'] as const) {
    it(`${dtype}: a NaN or infinity fails f16() and f32(), naming the file, tensor, coordinates and value`, () => {
      const nan = one(dtype, [0.5, 1, -2, 3, 4, NaN, 6, 7], [2, 4]);
      expect(() => nan.f16('w')).toThrow(NonFiniteError);
      expect(() => nan.f16('w')).toThrow(/bad\.safetensors: tensor 'w' has NaN at \[1, 1\] \(element 5 of 8\)/);
      expect(() => nan.f32('w')).toThrow(/bad\.safetensors: tensor 'w' has NaN at \[1, 1\]/);
      const inf = one(dtype, [1, 2, -Infinity]);
      expect(() => inf.f16('w')).toThrow(/tensor 'w' has -Infinity at index 2/);
      expect(() => inf.f32('w')).toThrow(/tensor 'w' has -Infinity at index 2/);
      // Finite values still read.
      expect([...one(dtype, [1, -2, 0.5]).f32('w')]).toEqual([1, -2, 0.5]);
    });
  }

  it('F16 scan: a NaN in the last, odd element of an unaligned tensor is found too', () => {
    const bits = new Uint16Array([0x3c00, 0x3c00, 0x7e00]);
    const bytes = writeSafetensors([{ name: 'h', shape: [3], data: bits, dtype: 'F16' }]);
    const shifted = new Uint8Array(bytes.length + 2);
    shifted.set(bytes, 2);
    expect(() => readSafetensors(shifted.subarray(2), 'h.safetensors').f16('h')).toThrow(/tensor 'h' has NaN at index 2/);
    expect(() => readSafetensors(bytes, 'h.safetensors').f16('h')).toThrow(/tensor 'h' has NaN at index 2/);
  });

  it('a finite F32 or BF16 value beyond f16\'s range fails f16() (it would be infinite on the GPU), not f32()', () => {
    for (const dtype of ['F32', 'BF16'] as const) {
      const st = one(dtype, [1, 2, 3, 1e6]);
      expect(() => st.f16('w')).toThrow(/tensor 'w' has \d+ at index 3 \(element 3 of 4\); beyond f16's ±65504/);
      expect(st.f32('w')[3]).toBeCloseTo(1e6, -4);
    }
  });
});

describe('safetensors writer', () => {
  it('round-trips F32 tensors and metadata, pads the header with spaces to 8 bytes', () => {
    const a = new Float32Array([1.5, -2, 3e-7, 1e30, 0, -0]);
    const b = new Float32Array([42]);
    const bytes = writeSafetensors(
      [
        { name: 'a.weight', shape: [2, 3], data: a },
        { name: 'b', shape: [], data: b },
      ],
      { format: 'pt', note: 'x' },
    );
    const { n, json } = rawHeader(bytes);
    expect(n % 8).toBe(0);
    const text = Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8');
    expect(text.trimEnd().length).toBeLessThanOrEqual(n);
    expect(/^ *$/.test(text.slice(text.trimEnd().length))).toBe(true);
    expect(json).toEqual({
      __metadata__: { format: 'pt', note: 'x' },
      'a.weight': { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
      b: { dtype: 'F32', shape: [], data_offsets: [24, 28] },
    });
    expect(bytes.length).toBe(8 + n + 28);
    const st = readSafetensors(bytes, 'out.safetensors');
    expect(st.f32('a.weight')).toEqual(a);
    expect(st.f32('b')).toEqual(b);
    expect(st.header.metadata).toEqual({ format: 'pt', note: 'x' });
  });

  it('rewrites the fixture gradients with identical data bytes', () => {
    const src = new Uint8Array(readFileSync(join(TINY, 'flowgrpo_grads.safetensors')));
    const st = readSafetensors(src, 'flowgrpo_grads.safetensors');
    const out = writeSafetensors(
      st.names().map((name) => ({ name, shape: st.descriptor(name).shape, data: st.f32(name) })),
      st.header.metadata,
    );
    const again = readSafetensors(out, 'out.safetensors');
    expect(again.names()).toEqual(st.names());
    const a = rawHeader(src);
    const b = rawHeader(out);
    expect(Buffer.from(out.subarray(8 + b.n)).equals(Buffer.from(src.subarray(8 + a.n)))).toBe(true);
    for (const name of st.names()) expect(b.json[name]).toEqual(a.json[name]);
  });

  it('f16 from a header-only descriptor needs the bytes: reading past them names the tensor', () => {
    const bytes = writeSafetensors([{ name: 't', shape: [4], data: new Float32Array(4) }]);
    const st = readSafetensors(bytes, 't.safetensors');
    const d = st.descriptor('t');
    expect(() => tensorToF16(bytes.subarray(0, bytes.length - 4), d)).toThrow(/t\.safetensors: tensor 't' needs bytes up to/);
  });
});
