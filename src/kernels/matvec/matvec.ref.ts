/** float64 reference: y = W x with W [rows, cols] row-major. */
export function matvecRef(W: ArrayLike<number>, x: ArrayLike<number>, rows: number, cols: number): Float64Array {
  const y = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let s = 0;
    for (let c = 0; c < cols; c++) s += W[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}
