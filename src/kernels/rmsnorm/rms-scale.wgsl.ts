// RMSNorm of rows whose sum of squares would overflow f32. A finite row with |x| above ~1.8e19 (or a
// smaller one summed over many elements) has an infinite sum of squares, 1/sqrt(inf) = 0, and the norm
// turns a finite hidden state into zeros: the logits of a layer later come out flat or wrong, confidently.
// Such a row is first scaled by a power of two s <= 1 that brings its largest |x| into [1, 4):
// rms(x) = rms(x * s) / s, and the norm factor is applied as (x * s) * k, k = 1/sqrt(mean((x s)^2) + eps s^2),
// so neither the sum nor the factor leaves f32's range (1/rms alone would be subnormal near f32's limit).
// Rows below RMS_SCALE_FROM (every row a working model makes) keep s = 1, so their results are bit for bit
// what the unscaled kernels gave. Non-finite inputs stay non-finite (NaN out), for the runtime to catch.

/** Rows whose max |x| reaches this are pre-scaled: below it a sum of 2^61 squares still fits f32. */
export const RMS_SCALE_FROM = 2 ** 33;

/**
 * `rms_scale(m)`: the power of two s for a row of max |x| = m (m >= RMS_SCALE_FROM), exact (exponent bits
 * only). RMS_SCALE_MARK: what a thread that met such an element adds to the row's sum of squares instead of
 * its own, so one reduction both sums ordinary rows and flags the others (negative total): the other
 * threads' squares are below 2^66 each, far too small to cancel it. Comparing magnitudes, not testing the
 * sum for infinity, because WGSL lets an implementation assume no infinities.
 */
export const RMS_SCALE_WGSL = /* wgsl */ `
const RMS_SCALE_FROM = ${RMS_SCALE_FROM}.0;
const RMS_SCALE_MARK = -1e30;
fn rms_scale(m: f32) -> f32 {
  // Biased exponent e of m; s = 2^(127 - e) puts m * s in [1, 2), kept normal (>= 2^-126) for m near f32's max.
  let e = i32((bitcast<u32>(m) >> 23u) & 0xffu);
  return bitcast<f32>(u32(clamp(254 - e, 1, 127)) << 23u);
}`;

/**
 * WGSL statements computing one row's RMSNorm as `rs_s` (the pre-scale, 1 for ordinary rows) and `rs_k`
 * (1/rms of the scaled row), so the normalised row is `x * rs_s * rs_k * w` and 1/rms(x) = rs_s * rs_k.
 * One workgroup of `wg` threads (`lid` in scope) reduces the row in `partial` (a workgroup f32 array of at
 * least wg entries); `read(i)` is element i of the row, `len` its length, `eps` the epsilon. Ordinary rows
 * cost one barrier more than the plain sum (the uniform load that picks the path). Needs RMS_SCALE_WGSL
 * in the module and uniform control flow (it has barriers).
 */
export function rowRmsWgsl(o: { wg: number; len: string; read: (i: string) => string; partial: string; eps: string }): string {
  const { wg, len, read, partial, eps } = o;
  const tree = (op: (a: string, b: string) => string) => `workgroupBarrier();
    for (var rs_st = ${wg / 2}u; rs_st > 0u; rs_st >>= 1u) {
      if (lid < rs_st) { ${partial}[lid] = ${op(`${partial}[lid]`, `${partial}[lid + rs_st]`)}; }
      workgroupBarrier();
    }`;
  const loop = (body: string) => `for (var rs_i = lid; rs_i < ${len}; rs_i += ${wg}u) { let rs_v = ${read('rs_i')}; ${body} }`;
  return `var rs_s = 1.0;
  var rs_k = 0.0;
  {
    var rs_ss = 0.0;
    var rs_big = false;
    ${loop('rs_ss += rs_v * rs_v; rs_big = rs_big || abs(rs_v) >= RMS_SCALE_FROM;')}
    ${partial}[lid] = select(rs_ss, RMS_SCALE_MARK, rs_big);
    ${tree((a, b) => `${a} + ${b}`)}
    // Uniform (every thread loads the same word after a barrier), as the rescan's barriers need.
    var rs_tot = workgroupUniformLoad(&${partial}[0]);
    if (rs_tot < 0.0) {
      var rs_mx = 0.0;
      ${loop('rs_mx = max(rs_mx, abs(rs_v));')}
      // Every thread has loaded the total before partial is reused (and the maximum before the sum below).
      workgroupBarrier();
      ${partial}[lid] = rs_mx;
      ${tree((a, b) => `max(${a}, ${b})`)}
      rs_s = rms_scale(workgroupUniformLoad(&${partial}[0]));
      var rs_ss2 = 0.0;
      ${loop('let rs_u = rs_v * rs_s; rs_ss2 += rs_u * rs_u;')}
      workgroupBarrier();
      ${partial}[lid] = rs_ss2;
      ${tree((a, b) => `${a} + ${b}`)}
      rs_tot = ${partial}[0];
    }
    // 1/sqrt rather than inverseSqrt: the latter is only ~2 ulp-accurate by spec on some GPUs.
    rs_k = 1.0 / sqrt(rs_tot / f32(${len}) + ${eps} * rs_s * rs_s);
  }`;
}
