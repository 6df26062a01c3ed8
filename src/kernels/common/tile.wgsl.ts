// The register-tiled product shared by every matmul-shaped kernel (f16 matmul, 4-bit matmul, 4-bit
// backward): out[r, c] = sum_k A[r, k] * B[k, c], one workgroup of 16x16 threads per `rows` x 64 block of
// out. Each step stages a `rows` x K tile of A and a K x 64 tile of B in workgroup memory (the kernel's
// `load` fills them: from f32, f16 or 4-bit dequantized on the way), then every thread adds those K
// products into its rows/16 x 4 outputs.
//
// Why one generator: the per-output summation order over k is the kernels' arithmetic. A thread's output
// is `acc += A * B` over k ascending whatever `rows` is, so the 16- and 32-row shapes for medium row
// counts and the 128-row one for large counts give results bit-identical to the 64-row one, and the three
// kernels cannot drift apart.
//
// Two thread layouts. Up to 64 rows a thread owns (ty + 16i, tx + 16j) and reads A and B as scalars: 4 + rows/16
// workgroup loads per 4 * rows/16 multiply-adds, which at 64 rows leaves the loop bound by workgroup-memory
// bandwidth (8 loads per 16 FMAs). At 128 rows a thread owns the 8 x 4 block (8ty + i, 4tx + j) and the
// tiles are vec4 arrays, so each k step is 2 vec4 loads of A and 1 of B for 32 FMAs. That tile needs
// 128 * K * 4 + 64 * K * 4 bytes of workgroup memory (24 KiB at the 4-bit forward's K = 32, above WebGPU's
// default 16 KiB), so tileRowsFor picks it only where the device grants that much.

/** Output columns per workgroup (16 threads x 4 accumulator lanes). */
export const TILE_COLS = 64;

/** Output rows per workgroup: 16 threads x 1, 2, 4 or 8 accumulators each. */
export type TileRows = 16 | 32 | 64 | 128;
export const TILE_ROW_CHOICES: readonly TileRows[] = [16, 32, 64, 128];

/** Workgroup memory of a `rows`-row tile staged `k` deep, in bytes. */
export function tileStorageBytes(rows: TileRows, k: number): number {
  return (rows + TILE_COLS) * k * 4;
}

/**
 * The 128-row tile halves the grid's workgroups; below this many it would leave multiprocessors idle (the
 * H200 has 132), so such grids keep 64 rows. Not yet timed per shape: the GPU kit compares the whole
 * choice against AGENTFLOW_TILE_ROWS_MAX=64.
 */
export const TILE_128_MIN_WORKGROUPS = 132;

/** What tileRowsFor needs to consider the 128-row tile (without it, the choice stops at 64 rows). */
export interface WideTileFit {
  /** Columns of out (grid width in TILE_COLS tiles). */
  cols: number;
  /** The kernel's K step. */
  k: number;
  /** The device's maxComputeWorkgroupStorageSize (ctx.caps.limits). */
  maxStorage: number;
  /** Workgroups along z (split-K slices, default 1): they count towards TILE_128_MIN_WORKGROUPS. */
  depth?: number;
}

/**
 * The shape for `n` rows: the smallest tile that covers them (a 64-row tile for 8 rows computes 56
 * padding rows), 64 beyond 32 rows, where a taller tile reads each B tile for more rows, and 128 from
 * 128 rows where `wide` says the device and grid allow it (and AGENTFLOW_TILE_ROWS_MAX does not forbid).
 */
export function tileRowsFor(n: number, wide?: WideTileFit): TileRows {
  if (n <= 16) return 16;
  if (n <= 32) return 32;
  if (n < 128 || !wide || tileRowsMax() < 128) return 64;
  if (tileStorageBytes(128, wide.k) > wide.maxStorage) return 64;
  if (Math.ceil(n / 128) * Math.ceil(wide.cols / TILE_COLS) * (wide.depth ?? 1) < TILE_128_MIN_WORKGROUPS) return 64;
  return 128;
}

/**
 * The tallest tile tileRowsFor may choose. Node only (a page has no environment):
 * AGENTFLOW_TILE_ROWS_MAX=64 restores the 64-row tile for large row counts, so the GPU kit can time the
 * 128-row tile against it in one call. Read here and nowhere else. Unset: 128.
 */
export function tileRowsMax(): TileRows {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const v = env?.AGENTFLOW_TILE_ROWS_MAX;
  if (v === undefined || v === '') return 128;
  const rows = Number(v);
  if (!(TILE_ROW_CHOICES as readonly number[]).includes(rows)) {
    throw new Error(`AGENTFLOW_TILE_ROWS_MAX must be one of ${TILE_ROW_CHOICES.join(', ')}, got '${v}'`);
  }
  return rows as TileRows;
}

/**
 * Throws, naming the kernel, unless `rows` is one of TILE_ROW_CHOICES and its tile, `k` deep, fits the
 * device's workgroup memory.
 */
export function checkTileRows(kernel: string, rows: number, k: number, maxStorage: number): TileRows {
  if (!(TILE_ROW_CHOICES as readonly number[]).includes(rows)) {
    throw new Error(`${kernel}: tileRows must be one of ${TILE_ROW_CHOICES.join(', ')}, got ${rows}`);
  }
  const bytes = tileStorageBytes(rows as TileRows, k);
  if (bytes > maxStorage) {
    throw new Error(`${kernel}: tileRows ${rows} needs ${bytes} B of workgroup memory, the device grants ${maxStorage} B`);
  }
  return rows as TileRows;
}

/** WGSL references to the staged tiles' elements, for a kernel's `load`. */
export interface TileRefs {
  /** `ta` element i (i = kk * rows + m: A[row0 + m, step + kk]), as an assignable WGSL reference. */
  a(i: string): string;
  /** `tb` element i (i = kk * 64 + c: B[step + kk, col0 + c]). */
  b(i: string): string;
}

export interface RegisterTile {
  rows: TileRows;
  /** Depth of one staged step (a multiple of 4). */
  k: number;
  /** Statements run once before the k loop (loader indices). In scope: col0, row0, tx, ty, lid, wg. */
  setup?: string;
  /** Header of the loop over steps, e.g. `for (var k0 = 0u; k0 < dims.inDim; k0 += 16u)`. */
  loop: string;
  /**
   * Statements filling one step's tiles, zero where out of range: `t.a(kk * rows + m)` = A[row0 + m, step + kk]
   * and `t.b(kk * 64 + c)` = B[step + kk, col0 + c].
   */
  load: (t: TileRefs) => string;
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
  return t.rows === 128 ? wideTileWgsl(t) : narrowTileWgsl(t);
}

function narrowTileWgsl(t: RegisterTile): string {
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
    ${t.load({ a: (i) => `ta[${i}]`, b: (i) => `tb[${i}]` })}
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
${storeRowWgsl(t, 16)}`;
}

/** 128 rows: thread (tx, ty) owns rows 8ty .. 8ty+7 and columns 4tx .. 4tx+3, read as vec4. */
function wideTileWgsl(t: RegisterTile): string {
  const R = t.rows;
  const C = TILE_COLS;
  if (t.k % 4 !== 0) throw new Error(`registerTileWgsl: the 128-row tile needs a K step that is a multiple of 4, got ${t.k}`);
  const accs = Array.from({ length: 8 }, (_, i) => i);
  // Element i of a vec4 array: the loaders keep their scalar indexing.
  const el = (arr: string) => (i: string) => `${arr}[(${i}) >> 2u][(${i}) & 3u]`;
  return /* wgsl */ `
// k-major ([k][m]) as vec4s, so a thread's 8 rows are 2 loads and its 4 columns 1.
var<workgroup> ta: array<vec4<f32>, ${(R * t.k) / 4}>;
var<workgroup> tb: array<vec4<f32>, ${(C * t.k) / 4}>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let col0 = wg.x * ${C}u;
  let row0 = wg.y * ${R}u;
  let tx = lid3.x;
  let ty = lid3.y;
  // acc_i: row 8ty + i, columns 4tx .. 4tx+3 (each lane one output, k ascending as in the 64-row tile).
  ${accs.map((i) => `var acc${i} = vec4<f32>(0.0);`).join('\n  ')}
  ${t.setup ?? ''}
  ${t.loop} {
    ${t.load({ a: el('ta'), b: el('tb') })}
    workgroupBarrier();
    for (var kk = 0u; kk < ${t.k}u; kk++) {
      let a0 = ta[kk * ${R / 4}u + 2u * ty];
      let a1 = ta[kk * ${R / 4}u + 2u * ty + 1u];
      let w = tb[kk * ${C / 4}u + tx];
      ${accs.map((i) => `acc${i} += a${i >> 2}.${'xyzw'[i & 3]} * w;`).join('\n      ')}
    }
    workgroupBarrier();
  }
  ${accs.map((i) => `storeTileRow(row0 + 8u * ty + ${i}u, col0 + 4u * tx, acc${i});`).join('\n  ')}
}
${storeRowWgsl(t, 1)}`;
}

/** storeTileRow(r, c0, acc): acc[j] to out[r, c0 + stride * j] where in range. */
function storeRowWgsl(t: RegisterTile, stride: number): string {
  return /* wgsl */ `
fn storeTileRow(r: u32, c0: u32, acc: vec4<f32>) {
  if (r >= ${t.rowCount}) { return; }
  for (var j = 0u; j < 4u; j++) {
    let c = c0 + ${stride}u * j;
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
