// A barrier-tree sum written out for one thread. The usual workgroup reduction adds slot i and slot i+s for
// s = width/2 .. 1, one barrier per level; one thread adding the same pairs in the same order gets the very
// same bits with no barrier, which matters where barriers are dear (a software GPU switches every SIMD group
// of the workgroup at each one) and the sum is needed by few threads.

/**
 * `fn name(args) -> f32`: the tree sum of read(0) .. read(width - 1) (width a power of two), straight-line
 * code with constant offsets.
 */
export function treeSumWgsl(name: string, args: string, read: (i: number) => string, width: number): string {
  if (!(width >= 2 && Number.isInteger(Math.log2(width)))) throw new Error(`treeSumWgsl: width must be a power of two >= 2, got ${width}`);
  const lines: string[] = [];
  let prev = read;
  for (let s = width / 2, level = 0; s >= 1; s >>= 1, level++) {
    const at = (i: number) => `t${level}_${i}`;
    const p = prev;
    for (let i = 0; i < s; i++) lines.push(`  let ${at(i)} = ${p(i)} + ${p(i + s)};`);
    prev = at;
  }
  return `fn ${name}(${args}) -> f32 {
${lines.join('\n')}
  return ${prev(0)};
}`;
}
