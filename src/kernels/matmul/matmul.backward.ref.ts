// float64 references for the frozen linear y = x W^T + b (W [out, in]) and its input gradient.

export function linearForwardRef(x: ArrayLike<number>, W: ArrayLike<number>, n: number, inDim: number, outDim: number, rowOffset = 0): Float64Array {
  const y = new Float64Array(n * outDim);
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < outDim; o++) {
      let s = 0;
      for (let i = 0; i < inDim; i++) s += x[r * inDim + i] * W[(rowOffset + o) * inDim + i];
      y[r * outDim + o] = s;
    }
  }
  return y;
}

/** dx = dy · W (plus `dxIn` when accumulating). */
export function matmulBackwardRef(dy: ArrayLike<number>, W: ArrayLike<number>, n: number, inDim: number, outDim: number, rowOffset = 0, dxIn?: ArrayLike<number>): Float64Array {
  const dx = dxIn ? Float64Array.from(dxIn) : new Float64Array(n * inDim);
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < outDim; o++) {
      const g = dy[r * outDim + o];
      for (let i = 0; i < inDim; i++) dx[r * inDim + i] += g * W[(rowOffset + o) * inDim + i];
    }
  }
  return dx;
}
