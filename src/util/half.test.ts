import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './half';

describe('half conversions', () => {
  it('encodes known f16 bit patterns', () => {
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(-2)).toBe(0xc000);
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(1e6)).toBe(0x7c00);
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001);
    expect(f32ToF16Bits(0.1)).toBe(0x2e66);
  });
  it('round-trips every finite f16 value', () => {
    // One expect for the whole sweep: 63k expect() calls took over 5 s on a loaded 2-core CI machine.
    const wrong: string[] = [];
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00) continue;
      // -0 and +0 keep their sign bit
      const back = f32ToF16Bits(f16BitsToF32(h));
      if (back !== h) wrong.push(`0x${h.toString(16)} -> 0x${back.toString(16)}`);
    }
    expect(wrong.slice(0, 10)).toEqual([]);
  });
  it('rounds to nearest even at the halfway point', () => {
    // 1 + 2^-11 is exactly between 1 and 1 + 2^-10: ties to even (1).
    expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00);
    expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
  });
  it('decodes and encodes bfloat16', () => {
    expect(bf16BitsToF32(0x3f80)).toBe(1);
    expect(bf16BitsToF32(0xc040)).toBe(-3);
    expect(f32ToBf16Bits(1)).toBe(0x3f80);
    expect(bf16BitsToF32(f32ToBf16Bits(3.14159))).toBeCloseTo(3.140625, 6);
  });
});
