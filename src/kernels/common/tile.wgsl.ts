// The register-tiled product shared by every matmul-shaped kernel (f16 matmul, 4-bit matmul, 4-bit
// backward): out[r, c] = sum_k A[r, k] * B[k, c], one workgroup of 16x16 threads per `rows` x 64 block of
// out. Each step stages a `rows` x K tile of A and a K x 64 tile of B in workgroup memory (the kernel's
// `load` fills them: from f32, f16 or 4-bit dequantized on the way), then every thread adds those K
// products into its rows/16 x 4 outputs.
//
// Why one generator: the per-output summation order over k is the kernels' arithmetic. A thread's output
// (ty + 16i, tx + 16j) is `acc_i[j] += A * B` over k ascending whatever `rows` is, so the 16- and 32-row
// shapes for medium row counts give results bit-identical to the 64-row one, and the three kernels cannot
// drift apart.

/** Output columns per workgroup (16 threads x 4 accumulator lanes, strided by 16). */
export const TILE_COLS = 64;

/** Output rows per workgroup: 16 threads x 1, 2 or 4 accumulators each. */
export type TileRows = 16 | 32 | 64;
export const TILE_ROW_CHOICES: readonly TileRows[] = [16, 32, 64];

/**
 * The shape for `n` rows: the smallest tile that covers them (a 64-row tile for 8 rows computes 56
 * padding rows), 64 beyond 32 rows, where a taller tile reads each B tile for more rows.
 */
export function tileRowsFor(n: number): TileRows {
  return n <= 16 ? 16 : n <= 32 ? 32 : 64;
}

/** Throws, naming the kernel, unless `rows` is one of TILE_ROW_CHOICES. */
export function checkTileRows(kernel: string, rows: number): TileRows {
  if (!(TILE_ROW_CHOICES as readonly number[]).includes(rows)) {
    throw new Error(`${kernel}: tileRows must be one of ${TILE_ROW_CHOICES.join(', ')}, got ${rows}`);
  }
  return rows as TileRows;
}

export interface RegisterTile {
  rows: TileRows;
  /** Depth of one staged step. */
  k: number;
  /** Statements run once before the k loop (loader indices). In scope: col0, row0, tx, ty, lid. */
  setup?: string;
  /** Header of the loop over steps, e.g. `for (var k0 = 0u; k0 < dims.inDim; k0 += 16u)`. */
  loop: string;
  /**
   * Statements filling one step's tiles, zero where out of range: `ta[kk * rows + m]` = A[row0 + m, step + kk]
   * and `tb[kk * 64 + c]` = B[step + kk, col0 + c].
   */
  load: string;
  /** WGSL expressions: the number of rows and columns of out (bounds of the store). */
  rowCount: string;
  colCount: string;
  /** Statement writing one output, with `r`, `c` (u32) and `v` (f32) in scope. */
  store: string;
}

/**
 * Workgroup tiles, the `main` entry point (workgroup_size(16, 16), grid [ceil(cols/64), ceil(rows/tile rows)])
 * and its store helper. The caller declares the bindings and any functions `load` / `store` use.
 */
export function registerTileWgsl(t: RegisterTile): string {
  const R = t.rows;
  const C = TILE_COLS;
  const accs = Array.from({ length: R / 16 }, (_, i) => i);
  return /* wgsl */ `
// k-major ([k][m]) so the inner loop reads consecutive rows / columns.
var<workgroup> ta: array<f32, ${R * t.k}>;
var<workgroup> tb: array<f32, ${C * t.k}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let col0 = wg.x * ${C}u;
  let row0 = wg.y * ${R}u;
  let tx = lid3.x;
  let ty = lid3.y;
  // vec4 accumulators (rows ty+16i, columns tx+16j): plain vectors compile much faster than dynamically
  // indexed arrays on software drivers, and map to registers everywhere.
  ${accs.map((i) => `var acc${i} = vec4<f32>(0.0);`).join('\n  ')}
  ${t.setup ?? ''}
  ${t.loop} {
    ${t.load}
    workgroupBarrier();
    for (var kk = 0u; kk < ${t.k}u; kk++) {
      let ab = kk * ${R}u + ty;
      let bb = kk * ${C}u + tx;
      let w = vec4<f32>(tb[bb], tb[bb + 16u], tb[bb + 32u], tb[bb + 48u]);
      ${accs.map((i) => `acc${i} += ta[ab${i ? ` + ${16 * i}u` : ''}] * w;`).join('\n      ')}
    }
    workgroupBarrier();
  }
  ${accs.map((i) => `storeTileRow(row0 + ty${i ? ` + ${16 * i}u` : ''}, col0 + tx, acc${i});`).join('\n  ')}
}

fn storeTileRow(r: u32, c0: u32, acc: vec4<f32>) {
  if (r >= ${t.rowCount}) { return; }
  for (var j = 0u; j < 4u; j++) {
    let c = c0 + 16u * j;
    let v = acc[j];
    if (c < ${t.colCount}) { ${t.store} }
  }
}
`;
}

/** Workgroups for an [n, cols] output in `rows`-row tiles, checked against the per-dimension limit. */
export function tileGrid(kernel: string, n: number, cols: number, rows: TileRows, max: number): [number, number] {
  const g: [number, number] = [Math.ceil(cols / TILE_COLS), Math.ceil(n / rows)];
  if (g[0] > max || g[1] > max) throw new Error(`${kernel}: grid ${g} exceeds ${max} workgroups per dimension`);
  return g;
}
