// Central finite differences of float64 functions: the independent check of every analytic backward
// (kernels' `.backward.ref.ts`). Float64 with h ~ 1e-5 gives ~1e-9 truncation error on smooth functions.

/** d f / d x_i for every i, by central differences. `f` must not keep a reference to its argument. */
export function centralDiff(f: (x: Float64Array) => number, x: ArrayLike<number>, h = 1e-5): Float64Array {
  const xx = Float64Array.from(x);
  const g = new Float64Array(xx.length);
  for (let i = 0; i < xx.length; i++) {
    const x0 = xx[i];
    xx[i] = x0 + h;
    const fp = f(xx);
    xx[i] = x0 - h;
    const fm = f(xx);
    xx[i] = x0;
    g[i] = (fp - fm) / (2 * h);
  }
  return g;
}

/** <a, b>: turns a vector-valued forward into the scalar L = <forward(x), dy> whose gradient is the backward. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`dot: length mismatch ${a.length} vs ${b.length}`);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}
