// The written-out tree sum must add exactly what the barrier tree it replaces adds (attention's block sum,
// the LoRA down projection's item sums): the e2e suite's sampling seeds depend on those bits.
import { describe, expect, it } from 'vitest';
import { Rng } from '../../util/rng';
import { treeSumWgsl } from './tree-sum.wgsl';

const f = Math.fround;

/** The generated WGSL run in f32: each `let name = a + b;` rounded to f32, slots read from `slots`. */
function runGenerated(src: string, slots: number[]): number {
  const vals = new Map<string, number>();
  const get = (e: string) => (e.startsWith('s[') ? slots[Number(e.slice(2, -1))] : vals.get(e)!);
  for (const m of src.matchAll(/let (\w+) = (\S+) \+ (\S+);/g)) vals.set(m[1], f(get(m[2]) + get(m[3])));
  return get(/return (\S+);/.exec(src)![1]);
}

/** The workgroup reduction it stands for: slot i += slot i+s, s = width/2 .. 1. */
function barrierTree(slots: number[]): number {
  const red = slots.slice();
  for (let s = red.length / 2; s >= 1; s >>= 1) for (let i = 0; i < s; i++) red[i] = f(red[i] + red[i + s]);
  return red[0];
}

describe('treeSumWgsl', () => {
  it('adds the same pairs in the same order as the barrier tree, to the bit', () => {
    const rng = new Rng(3);
    for (const width of [2, 8, 64]) {
      const src = treeSumWgsl('sum', '', (i) => `s[${i}]`, width);
      let orderMatters = false;
      for (let t = 0; t < 200; t++) {
        // Magnitudes spread over many octaves, so a different order of adds gives different bits.
        const slots = Array.from({ length: width }, () => f(rng.normal() * 2 ** rng.int(40)));
        const want = barrierTree(slots);
        expect(Object.is(runGenerated(src, slots), want)).toBe(true);
        if (slots.reduce((a, b) => f(a + b), 0) !== want) orderMatters = true;
      }
      if (width > 2) expect(orderMatters).toBe(true);
    }
  });

  it('refuses a width that is not a power of two', () => {
    expect(() => treeSumWgsl('sum', '', (i) => `s[${i}]`, 48)).toThrow(/power of two/);
  });
});
