// float64 rotate-half RoPE (LAYOUTS.md) and its gradient, x [n, heads*hd].

function rotate(x: ArrayLike<number>, pos: ArrayLike<number>, n: number, heads: number, hd: number, theta: number, sign: 1 | -1): Float64Array {
  const y = Float64Array.from(x);
  const half = hd / 2;
  for (let r = 0; r < n; r++) {
    for (let h = 0; h < heads; h++) {
      const base = (r * heads + h) * hd;
      for (let i = 0; i < half; i++) {
        const ang = pos[r] * theta ** ((-2 * i) / hd);
        const c = Math.cos(ang);
        const s = sign * Math.sin(ang);
        const a = x[base + i];
        const b = x[base + i + half];
        y[base + i] = a * c - b * s;
        y[base + i + half] = b * c + a * s;
      }
    }
  }
  return y;
}

export function ropeForwardRef(x: ArrayLike<number>, pos: ArrayLike<number>, n: number, heads: number, hd: number, theta: number): Float64Array {
  return rotate(x, pos, n, heads, hd, theta, 1);
}

/** The transpose of the forward's rotation: rotation by -angle. */
export function ropeBackwardRef(dy: ArrayLike<number>, pos: ArrayLike<number>, n: number, heads: number, hd: number, theta: number): Float64Array {
  return rotate(dy, pos, n, heads, hd, theta, -1);
}
