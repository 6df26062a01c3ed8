// Which benchmark items to run, as the user types them: 1-based numbers and ranges.
/** '1-3, 7' -> [0, 1, 2, 6] (1-based, inclusive, within 1..n). Throws naming the bad part. */
export function parseSubset(spec: string, n: number): number[] {
  const s = spec.trim();
  if (!s || s === 'all') return Array.from({ length: n }, (_, i) => i);
  const out = new Set<number>();
  for (const part of s.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    if (!m) throw new Error(`subset: '${part.trim()}' is not a number or a range like 3-7`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (a < 1 || b > n || a > b) throw new Error(`subset: '${part.trim()}' is outside 1-${n}`);
    for (let i = a; i <= b; i++) out.add(i - 1);
  }
  return [...out].sort((x, y) => x - y);
}
