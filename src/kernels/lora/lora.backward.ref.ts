// float64 reference of the LoRA branch y = s * (x A^T) B^T and its gradients (x [n,in], A [r,in], B [out,r]).

export function loraForwardRef(x: ArrayLike<number>, A: ArrayLike<number>, B: ArrayLike<number>, n: number, inDim: number, outDim: number, r: number, s: number): Float64Array {
  const y = new Float64Array(n * outDim);
  const t = new Float64Array(r);
  for (let row = 0; row < n; row++) {
    for (let j = 0; j < r; j++) {
      let acc = 0;
      for (let i = 0; i < inDim; i++) acc += x[row * inDim + i] * A[j * inDim + i];
      t[j] = acc;
    }
    for (let o = 0; o < outDim; o++) {
      let acc = 0;
      for (let j = 0; j < r; j++) acc += t[j] * B[o * r + j];
      y[row * outDim + o] = s * acc;
    }
  }
  return y;
}

export function loraTRef(x: ArrayLike<number>, A: ArrayLike<number>, n: number, inDim: number, r: number): Float64Array {
  const t = new Float64Array(n * r);
  for (let row = 0; row < n; row++) {
    for (let j = 0; j < r; j++) {
      let acc = 0;
      for (let i = 0; i < inDim; i++) acc += x[row * inDim + i] * A[j * inDim + i];
      t[row * r + j] = acc;
    }
  }
  return t;
}

/** Gradients of <loraForward(x, A, B), dy> with respect to A, B and x (not accumulated). */
export function loraBackwardRef(x: ArrayLike<number>, A: ArrayLike<number>, B: ArrayLike<number>, dy: ArrayLike<number>, n: number, inDim: number, outDim: number, r: number, s: number): { dA: Float64Array; dB: Float64Array; dx: Float64Array; dt: Float64Array } {
  const t = loraTRef(x, A, n, inDim, r);
  const dB = new Float64Array(outDim * r);
  const dt = new Float64Array(n * r);
  const dA = new Float64Array(r * inDim);
  const dx = new Float64Array(n * inDim);
  for (let row = 0; row < n; row++) {
    for (let o = 0; o < outDim; o++) {
      const g = dy[row * outDim + o];
      for (let j = 0; j < r; j++) {
        dB[o * r + j] += s * g * t[row * r + j];
        dt[row * r + j] += s * g * B[o * r + j];
      }
    }
    for (let j = 0; j < r; j++) {
      const g = dt[row * r + j];
      for (let i = 0; i < inDim; i++) {
        dA[j * inDim + i] += g * x[row * inDim + i];
        dx[row * inDim + i] += g * A[j * inDim + i];
      }
    }
  }
  return { dA, dB, dx, dt };
}
