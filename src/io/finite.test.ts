import { describe, expect, it } from 'vitest';
import { coordinates, firstNonFiniteBf16, firstNonFiniteF32, firstNonFiniteHalf } from './finite.ts';

describe('non-finite scans', () => {
  it('half: finds NaN and ±infinity at every position, aligned or not, and passes the largest finite halves', () => {
    for (const bad of [0x7c00, 0xfc00, 0x7e00, 0x7c01]) {
      for (const len of [1, 2, 5, 8]) {
        for (const shift of [0, 1]) {
          for (let at = 0; at < len; at++) {
            const store = new Uint16Array(len + 1).fill(0x7bff); // 65504
            const view = store.subarray(shift, shift + len);
            view[at] = bad;
            expect(firstNonFiniteHalf(view), `bits ${bad.toString(16)} at ${at} of ${len}, shift ${shift}`).toBe(at);
          }
        }
      }
    }
    expect(firstNonFiniteHalf(new Uint16Array([0x7bff, 0xfbff, 0x0001, 0x8000, 0x3c00]))).toBe(-1);
    expect(firstNonFiniteHalf(new Uint16Array(0))).toBe(-1);
  });

  it('bfloat16 and float32: NaN and ±infinity, not the largest finite values', () => {
    expect(firstNonFiniteBf16(new Uint16Array([0x7f7f, 0xff7f, 0x7fc0]))).toBe(2);
    expect(firstNonFiniteBf16(new Uint16Array([0xff80]))).toBe(0);
    expect(firstNonFiniteBf16(new Uint16Array([0x7f7f, 0x0001]))).toBe(-1);
    expect(firstNonFiniteF32(new Float32Array([3.4e38, -3.4e38, -Infinity]))).toBe(2);
    expect(firstNonFiniteF32(new Float32Array([0, NaN]).subarray(1))).toBe(0);
    expect(firstNonFiniteF32(new Float32Array([3.4e38, 1e-45]))).toBe(-1);
  });

  it('coordinates of a row-major index', () => {
    expect(coordinates(0, [2, 3])).toEqual([0, 0]);
    expect(coordinates(5, [2, 3])).toEqual([1, 2]);
    expect(coordinates(13, [2, 3, 4])).toEqual([1, 0, 1]);
  });
});
