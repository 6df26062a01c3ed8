// float64 SwiGLU forward act = silu(gate) * up and its gradients.

const sigmoid = (g: number) => 1 / (1 + Math.exp(-g));

export function swigluForwardRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  return Float64Array.from(gate, (g, i) => g * sigmoid(g) * up[i]);
}

export function swigluBackwardRef(dact: ArrayLike<number>, gate: ArrayLike<number>, up: ArrayLike<number>): { dgate: Float64Array; dup: Float64Array } {
  const dgate = new Float64Array(gate.length);
  const dup = new Float64Array(gate.length);
  for (let i = 0; i < gate.length; i++) {
    const g = gate[i];
    const s = sigmoid(g);
    dup[i] = dact[i] * g * s;
    dgate[i] = dact[i] * up[i] * s * (1 + g * (1 - s));
  }
  return { dgate, dup };
}
