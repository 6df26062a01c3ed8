/**
 * float64 reference rotate-half RoPE of x [N, heads*hd] (returns a new array). With `f32Angle` the angle
 * is rounded the way the kernel and Hugging Face form it (fround(pos * fround(inv_freq))); the rotation
 * itself stays float64.
 */
export function ropeRef(
  x: ArrayLike<number>,
  pos: ArrayLike<number>,
  heads: number,
  hd: number,
  theta: number,
  f32Angle = false,
): Float64Array {
  const y = Float64Array.from(x);
  const half = hd / 2;
  for (let n = 0; n < pos.length; n++)
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < half; i++) {
        const invf = Math.pow(theta, (-2 * i) / hd);
        const ang = f32Angle ? Math.fround(pos[n] * Math.fround(invf)) : pos[n] * invf;
        const c = Math.cos(ang);
        const s = Math.sin(ang);
        const base = n * heads * hd + h * hd;
        const a = x[base + i];
        const b = x[base + i + half];
        y[base + i] = a * c - b * s;
        y[base + i + half] = b * c + a * s;
      }
  return y;
}
