// The subgroup-matrix probe's inputs and its float64 check: seeded f16 operands, the output entries sampled
// for checking, C[r, c] = sum_k A[r, k] W[c, k] in float64 on the halves' exact values, and the errors and
// TFLOP/s it reports. Pure, so the probe's numbers rest on tested code even where no GPU runs it.
import { f16BitsToF32, f32ToF16Bits } from '../src/util/half';

/** A small seeded generator (mulberry32): the same operands on every run and machine. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` f16 values uniform in [-1, 1) as bits, and their exact values. */
export function randomHalves(count: number, seed: number): { bits: Uint16Array; values: Float32Array } {
  const next = rng(seed);
  const bits = new Uint16Array(count);
  const values = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    bits[i] = f32ToF16Bits(next() * 2 - 1);
    values[i] = f16BitsToF32(bits[i]);
  }
  return { bits, values };
}

/** `count` distinct-ish (row, column) entries of an m x n output, always including the two far corners. */
export function sampleEntries(m: number, n: number, count: number, seed: number): Array<[number, number]> {
  const next = rng(seed);
  const out: Array<[number, number]> = [[0, 0], [m - 1, n - 1]];
  while (out.length < count) out.push([Math.floor(next() * m), Math.floor(next() * n)]);
  return out.slice(0, Math.max(count, 0));
}

/** C[row, col] of A[m, k] · W[n, k]^T in float64, and the sum of |products| (the scale rounding errors grow with). */
export function referenceEntry(a: ArrayLike<number>, w: ArrayLike<number>, k: number, row: number, col: number): { value: number; absSum: number } {
  let value = 0;
  let absSum = 0;
  for (let i = 0; i < k; i++) {
    const p = a[row * k + i] * w[col * k + i];
    value += p;
    absSum += Math.abs(p);
  }
  return { value, absSum };
}

export interface CheckResult {
  entries: number;
  /** max |got - ref| / |ref| over entries whose |ref| is at least 1% of their sum of |products| (no cancellation). */
  maxRelError: number;
  /** max |got - ref| / sum |products|: meaningful for every entry. */
  maxErrorOverAbsSum: number;
  /** Entries that are not finite numbers. */
  nonFinite: number;
}

/** Compares `got(row, col)` with the float64 reference at the sampled entries. */
export function checkEntries(
  got: (row: number, col: number) => number,
  a: ArrayLike<number>,
  w: ArrayLike<number>,
  k: number,
  entries: Array<[number, number]>,
): CheckResult {
  let maxRelError = 0;
  let maxErrorOverAbsSum = 0;
  let nonFinite = 0;
  for (const [r, c] of entries) {
    const g = got(r, c);
    if (!Number.isFinite(g)) {
      nonFinite++;
      continue;
    }
    const ref = referenceEntry(a, w, k, r, c);
    const err = Math.abs(g - ref.value);
    if (ref.absSum > 0) maxErrorOverAbsSum = Math.max(maxErrorOverAbsSum, err / ref.absSum);
    if (Math.abs(ref.value) >= 0.01 * ref.absSum && ref.value !== 0) maxRelError = Math.max(maxRelError, err / Math.abs(ref.value));
  }
  const round = (x: number): number => Number(x.toPrecision(3));
  return { entries: entries.length, maxRelError: round(maxRelError), maxErrorOverAbsSum: round(maxErrorOverAbsSum), nonFinite };
}

/** TFLOP/s of an m x n x k matmul taking `ms` (2 flops per multiply-add). */
export function tflops(m: number, n: number, k: number, ms: number): number {
  return Number(((2 * m * n * k) / (ms * 1e9)).toPrecision(4));
}

export interface Shape {
  name: string;
  m: number;
  k: number;
  n: number;
}

/** `--shapes name:KxN,...` with `--rows M`, checked; names the bad item. */
export function parseShapes(spec: string, rows: number): Shape[] {
  if (!Number.isInteger(rows) || rows < 1) throw new Error(`--rows must be a positive integer, got '${rows}'`);
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((item) => {
      const m = /^([\w.-]+):(\d+)x(\d+)$/.exec(item);
      if (!m || Number(m[2]) < 1 || Number(m[3]) < 1) throw new Error(`--shapes: '${item}' is not name:KxN (e.g. qkv:896x1152)`);
      return { name: m[1], m: rows, k: Number(m[2]), n: Number(m[3]) };
    });
}
