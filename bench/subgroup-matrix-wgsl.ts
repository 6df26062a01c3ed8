// WGSL for the subgroup-matrix probe (bench/subgroup-matrix-probe.ts): C[m, n] = A[m, k] · W[n, k]^T with
// Dawn's `chromium_experimental_subgroup_matrix` (tensor cores on NVIDIA through VK_KHR_cooperative_matrix).
// W is stored [out, in] as the model's linear weights are (src/kernels/LAYOUTS.md), so the right operand, a
// [k, n] matrix, is W read column-major with stride k: no transpose pass. Pure: text only, so its structure
// is unit-tested here and its compile is checked on Dawn's null backend, where no GPU has the feature.
//
// Syntax of the Dawn the `webgpu` package ships (the 4-argument form with a bool is deprecated there):
//   subgroup_matrix_left<T, K, M>   (M rows, K columns)    subgroup_matrix_right<T, N, K>   (K rows, N columns)
//   subgroup_matrix_result<R, N, M> (M rows, N columns)    template arguments are <type, columns, rows>
//   subgroupMatrixLoad<S, row_major|col_major>(&array, offsetElements, strideElements) -> S
//   subgroupMatrixMultiplyAccumulate(left, right, acc) -> acc's type
//   subgroupMatrixStore<row_major|col_major>(&array, offsetElements, matrix, strideElements)
// Offsets must be subgroup-uniform (so the subgroup index comes from @builtin(subgroup_id), `enable subgroups`),
// and a pipeline's workgroup x size must be a multiple of the device's maxSubgroupSize.

/** One of the adapter's `subgroupMatrixConfigs` (GPUSubgroupMatrixConfig). */
export interface MatrixConfig {
  componentType: string;
  resultComponentType: string;
  M: number;
  N: number;
  K: number;
}

/** How a workgroup covers its block of C: a grid of subgroups, each owning tm x tn result matrices. */
export interface Variant {
  name: string;
  /** Subgroups per workgroup, as rows x columns of the block. */
  sgRows: number;
  sgCols: number;
  /** Result matrices per subgroup (rows, columns). */
  tm: number;
  tn: number;
  /**
   * Stage A and W through workgroup memory, bk columns of k at a time (a multiple of the config's K);
   * absent: every subgroup loads its operands straight from the storage buffers.
   */
  bk?: number;
  /**
   * A is f32 (as the model's activations are) and is rounded to f16 while staged: what a training kernel
   * would do. Staged f16 configs only.
   */
  aF32?: boolean;
}

/**
 * The variants the probe tries: one subgroup and four reading the buffers directly (reuse through the caches
 * only), two staged through workgroup memory (8 subgroups of 4x2 matrices, 4 of 4x4), and both with f32 A
 * rounded while staged, as training's activations would be.
 */
export const VARIANTS: readonly Variant[] = [
  { name: 'direct-1sg-2x2', sgRows: 1, sgCols: 1, tm: 2, tn: 2 },
  { name: 'direct-4sg-2x4', sgRows: 2, sgCols: 2, tm: 2, tn: 4 },
  { name: 'staged-8sg-4x2-bk32', sgRows: 2, sgCols: 4, tm: 4, tn: 2, bk: 32 },
  // The best staged layout with f32 A, as the runtime's kernels (common/sgm-tile.wgsl.ts) stage activations.
  { name: 'staged-8sg-4x2-bk32-f32a', sgRows: 2, sgCols: 4, tm: 4, tn: 2, bk: 32, aF32: true },
  { name: 'staged-4sg-4x4-bk32', sgRows: 2, sgCols: 2, tm: 4, tn: 4, bk: 32 },
  { name: 'staged-4sg-4x4-bk32-f32a', sgRows: 2, sgCols: 2, tm: 4, tn: 4, bk: 32, aF32: true },
];

/** Component types this generator writes kernels for; the integer ones (u8/i8 packed in u32) are skipped. */
export const FLOAT_TYPES = new Set(['f16', 'f32']);

export function usable(c: MatrixConfig): boolean {
  return FLOAT_TYPES.has(c.componentType) && FLOAT_TYPES.has(c.resultComponentType);
}

export interface Geometry {
  /** Rows and columns of C one workgroup computes. */
  blockM: number;
  blockN: number;
  /** k per staging step (the config's K when direct). */
  bk: number;
  subgroups: number;
  workgroupSize: number;
  /** Bytes of workgroup memory (0 when direct). */
  workgroupBytes: number;
}

/** Staged rows are padded by 8 elements (16 bytes of f16) so rows start on different banks and stay 16-byte aligned. */
export const STAGE_PAD = 8;

const bytesOf = (t: string): number => (t === 'f16' ? 2 : 4);

export function geometry(c: MatrixConfig, v: Variant, subgroupSize: number): Geometry {
  const blockM = v.sgRows * v.tm * c.M;
  const blockN = v.sgCols * v.tn * c.N;
  const bk = v.bk ?? c.K;
  const subgroups = v.sgRows * v.sgCols;
  const workgroupBytes = v.bk ? (blockM + blockN) * (bk + STAGE_PAD) * bytesOf(c.componentType) : 0;
  return { blockM, blockN, bk, subgroups, workgroupSize: subgroups * subgroupSize, workgroupBytes };
}

/** Why the kernel cannot run this shape (null when it can): the kernels have no bounds checks. */
export function shapeProblem(c: MatrixConfig, v: Variant, subgroupSize: number, m: number, n: number, k: number): string | null {
  const g = geometry(c, v, subgroupSize);
  if (m % g.blockM || n % g.blockN || k % g.bk) return `shape ${m}x${n}x${k} is not a multiple of the block ${g.blockM}x${g.blockN}x${g.bk}`;
  return k % 4 ? `k ${k} is not a multiple of 4 (staged loads are vec4s)` : variantProblem(c, v, subgroupSize);
}

/** Why this variant cannot be built for this config (null when it can): staging copies whole vec4s, evenly. */
export function variantProblem(c: MatrixConfig, v: Variant, subgroupSize: number): string | null {
  if (!usable(c)) return `no kernel for ${c.componentType} -> ${c.resultComponentType} (float types only)`;
  if (v.aF32 && (v.bk === undefined || c.componentType !== 'f16')) return 'f32 A is rounded to f16 while staged: staged f16 configs only';
  if (v.bk === undefined) return null;
  const g = geometry(c, v, subgroupSize);
  if (v.bk % c.K !== 0) return `bk ${v.bk} is not a multiple of the config's K ${c.K}`;
  if (((g.blockM * g.bk) / 4) % g.workgroupSize || ((g.blockN * g.bk) / 4) % g.workgroupSize) {
    return `staging ${g.blockM}x${g.bk} and ${g.blockN}x${g.bk} tiles is not a whole number of vec4 loads for ${g.workgroupSize} invocations`;
  }
  return null;
}

const range = (n: number): number[] => [...Array(n).keys()];

/**
 * The kernel. Bindings: 0 A [m, k], 1 W [n, k] (componentType, A f32 with aF32; vec4s when staged), 2 C [m, n]
 * (resultComponentType), 3 uniform dims {m, n, k}. Grid: (n / blockN, m / blockM). Every dimension must
 * be a multiple of the block (shapeProblem).
 */
export function subgroupMatrixWgsl(c: MatrixConfig, v: Variant, subgroupSize: number): string {
  const problem = variantProblem(c, v, subgroupSize);
  if (problem) throw new Error(`subgroup-matrix probe, ${v.name}: ${problem}`);
  const g = geometry(c, v, subgroupSize);
  const T = c.componentType;
  const R = c.resultComponentType;
  const left = `subgroup_matrix_left<${T}, ${c.K}, ${c.M}>`;
  const right = `subgroup_matrix_right<${T}, ${c.N}, ${c.K}>`;
  const result = `subgroup_matrix_result<${R}, ${c.N}, ${c.M}>`;
  const acc = (i: number, j: number): string => `acc_${i}_${j}`;
  const tiles = range(v.tm).flatMap((i) => range(v.tn).map((j) => [i, j] as const));
  const staged = v.bk !== undefined;
  const stride = g.bk + STAGE_PAD;
  const enables = [T, R].includes('f16') ? 'enable f16;\n' : '';
  const inputs = staged
    ? `@group(0) @binding(0) var<storage, read> a: array<vec4<${v.aF32 ? 'f32' : T}>>;\n@group(0) @binding(1) var<storage, read> w: array<vec4<${T}>>;`
    : `@group(0) @binding(0) var<storage, read> a: array<${T}>;\n@group(0) @binding(1) var<storage, read> w: array<${T}>;`;
  // Direct: operands come from the storage buffers, offsets in elements of the [rows, k] arrays.
  // Staged: from the workgroup tiles, [blockM or blockN rows][bk + pad].
  const loads = (kk: string, src: 'global' | 'tile'): string => {
    const ls = range(v.tm).map((i) =>
      src === 'global'
        ? `    let l${i} = subgroupMatrixLoad<${left}, row_major>(&a, (row0 + ${i * c.M}u) * dims.k + ${kk}, dims.k);`
        : `    let l${i} = subgroupMatrixLoad<${left}, row_major>(&tile_a, (sg_row + ${i * c.M}u) * ${stride}u + ${kk}, ${stride}u);`,
    );
    const rs = range(v.tn).map((j) =>
      src === 'global'
        ? `    let r${j} = subgroupMatrixLoad<${right}, col_major>(&w, (col0 + ${j * c.N}u) * dims.k + ${kk}, dims.k);`
        : `    let r${j} = subgroupMatrixLoad<${right}, col_major>(&tile_w, (sg_col + ${j * c.N}u) * ${stride}u + ${kk}, ${stride}u);`,
    );
    const mma = tiles.map(([i, j]) => `    ${acc(i, j)} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, ${acc(i, j)});`);
    return [...ls, ...rs, ...mma].join('\n');
  };
  // Staging: each invocation copies whole vec4s, a fixed count per step so control flow stays uniform.
  const stage = (tile: 'tile_a' | 'tile_w', src: 'a' | 'w', rows: number, origin: string): string => {
    const perRow = g.bk / 4;
    const count = (rows * perRow) / g.workgroupSize;
    return range(count)
      .map((s) => {
        const e = `e${tile}${s}`;
        return [
          `    let ${e} = lidx + ${s * g.workgroupSize}u;`,
          `    let v${e} = ${src}[((${origin} + ${e} / ${perRow}u) * dims.k + k0) / 4u + ${e} % ${perRow}u];`,
          `    let o${e} = (${e} / ${perRow}u) * ${stride}u + (${e} % ${perRow}u) * 4u;`,
          ...(src === 'a' && v.aF32
            ? [`    ${tile}[o${e}] = f16(v${e}.x); ${tile}[o${e} + 1u] = f16(v${e}.y); ${tile}[o${e} + 2u] = f16(v${e}.z); ${tile}[o${e} + 3u] = f16(v${e}.w);`]
            : [`    ${tile}[o${e}] = v${e}.x; ${tile}[o${e} + 1u] = v${e}.y; ${tile}[o${e} + 2u] = v${e}.z; ${tile}[o${e} + 3u] = v${e}.w;`]),
        ].join('\n');
      })
      .join('\n');
  };
  const body = staged
    ? `  let sg_row = (sg / ${v.sgCols}u) * ${v.tm * c.M}u;
  let sg_col = (sg % ${v.sgCols}u) * ${v.tn * c.N}u;
  for (var k0 = 0u; k0 < dims.k; k0 += ${g.bk}u) {
${stage('tile_a', 'a', g.blockM, 'block_row')}
${stage('tile_w', 'w', g.blockN, 'block_col')}
    workgroupBarrier();
    for (var kk = 0u; kk < ${g.bk}u; kk += ${c.K}u) {
${loads('kk', 'tile')}
    }
    workgroupBarrier();
  }
  let row0 = block_row + sg_row;
  let col0 = block_col + sg_col;`
    : `  let row0 = block_row + (sg / ${v.sgCols}u) * ${v.tm * c.M}u;
  let col0 = block_col + (sg % ${v.sgCols}u) * ${v.tn * c.N}u;
  for (var k0 = 0u; k0 < dims.k; k0 += ${c.K}u) {
${loads('k0', 'global')}
  }`;
  return `${enables}enable subgroups;
enable chromium_experimental_subgroup_matrix;

// ${v.name}: ${c.componentType} x ${c.componentType} -> ${c.resultComponentType}, ${c.M}x${c.N}x${c.K} matrices;
// block ${g.blockM}x${g.blockN}, ${g.subgroups} subgroup(s) of ${subgroupSize}, ${v.tm}x${v.tn} result matrices each.
struct Dims { m: u32, n: u32, k: u32 }

${inputs}
@group(0) @binding(2) var<storage, read_write> c: array<${R}>;
@group(0) @binding(3) var<uniform> dims: Dims;
${staged ? `var<workgroup> tile_a: array<${T}, ${g.blockM * stride}>;\nvar<workgroup> tile_w: array<${T}, ${g.blockN * stride}>;\n` : ''}
@compute @workgroup_size(${g.workgroupSize})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lidx: u32, @builtin(subgroup_id) sg: u32) {
  // Matrix offsets must be uniform across the subgroup: subgroup_id is, lidx / ${subgroupSize} is not (to the compiler).
  let block_row = wg.y * ${g.blockM}u;
  let block_col = wg.x * ${g.blockN}u;
${tiles.map(([i, j]) => `  var ${acc(i, j)} = ${result}();`).join('\n')}
${body}
${tiles.map(([i, j]) => `  subgroupMatrixStore<row_major>(&c, (row0 + ${i * c.M}u) * dims.n + col0 + ${j * c.N}u, ${acc(i, j)}, dims.n);`).join('\n')}
}
`;
}
