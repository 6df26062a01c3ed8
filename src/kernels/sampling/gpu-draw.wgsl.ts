// The draw of a sampled token on the GPU, so a decode loop can encode the next step before it knows the
// token: the token id goes straight into the next step's ids buffer and into a log the CPU reads later.
// It mirrors the CPU rule (draw.ts: candidateDistribution + pickIndex, and pickFromPrefix for pure
// temperature) in f32 over the final top-k pass's sorted candidates. f32 and the CPU's float64 can only
// disagree when u, or the top-p cut, lies within rounding of an interval boundary; the kernel then sets
// `flag` instead of guessing (and when the candidates cannot decide at all), and the CPU redoes that step
// with the float64 rule. So a token taken from the GPU is exactly the one the CPU rule gives.
// Pure temperature past the candidates' mass draws from the tail of the logits row by rejection sampling
// (draw.ts: drawTail): the workgroup's threads try TAIL_WG attempts a round, and the first attempt that is
// accepted, or too close to call in f32, ends the draw (the latter as undecided). A tail with so little
// weight that TAIL_ROUNDS rounds find nothing is left to the CPU too.
//
// Log entry (DRAW_LOG_WORDS u32 per step, at the step's index): token id, flag, the token's logit (f32
// bits), the temperature-1 running max and sum (f32 bits) from which the CPU computes log p(token).
//
// One workgroup per row of a batch (the sequences of a decode step). Row r's draw entry (DRAW_ENTRY_WORDS
// u32 at r * DRAW_ENTRY_WORDS, queue-written before the submission) holds its uniform, its log index and
// the draw plan that serves it: rows of one step may sample with different options, and each plan (one
// set of options) draws only its own rows. DRAW_ANY_PLAN: whichever plan runs (a lone sequence).

export const DRAW_LOG_WORDS = 8;
export const DRAW_ENTRY_WORDS = 4;
export const DRAW_ANY_PLAN = 0xffffffff;
/** Distance from a boundary under which f32 is not trusted to agree with float64. */
export const DRAW_EPS = 1e-4;
/** Threads of a row's draw: tail attempts per round. */
export const TAIL_WG = 256;
/** Rounds of tail attempts before the GPU leaves the draw to the CPU (TAIL_WG * TAIL_ROUNDS attempts). */
export const TAIL_ROUNDS = 512;
/**
 * Relative tolerance of a tail acceptance test a < exp(x), per unit and per |x|, in units of 2^-23: WGSL
 * allows exp 3 + 2|x| ulp, f32 rounds x (and 1/T) by |x| ulp more; these are about four times that.
 */
export const TAIL_TOL_ULPS = 16;
export const TAIL_TOL_ULPS_PER_X = 8;

export const gpuDrawWgsl = /* wgsl */ `
struct Params { k: u32, greedy: u32, topK: u32, vocab: u32, invT: f32, topP: f32, eps: f32, plan: u32 }
// [rows, k] sorted candidates (the last top-k pass).
@group(0) @binding(0) var<storage, read> candVals: array<f32>;
@group(0) @binding(1) var<storage, read> candIds: array<u32>;
// [rows, 3] running (max, sumexp, -) at temperature 1 and T.
@group(0) @binding(2) var<storage, read> stats1: array<f32>;
@group(0) @binding(3) var<storage, read> statsT: array<f32>;
// [rows, DRAW_ENTRY_WORDS]: u as f32 bits, log index, plan.
@group(0) @binding(4) var<storage, read> step: array<u32>;
// [rows]: row r's token (the next decode step's input ids).
@group(0) @binding(5) var<storage, read_write> outIds: array<u32>;
@group(0) @binding(6) var<storage, read_write> drawLog: array<u32>;
@group(0) @binding(7) var<uniform> P: Params;
// [rows, vocab]: the logits rows (the tail draw reads them).
@group(0) @binding(8) var<storage, read> logits: array<f32>;

const NONE = 0xffffffffu;

// Thread 0's candidate draw, shared with the tail draw.
var<workgroup> wPick: u32;
var<workgroup> wFlag: u32;
var<workgroup> wTail: u32;
// The first tail attempt that was accepted or too close to call.
var<workgroup> wFirst: atomic<u32>;

fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// Tail attempt k of a row: 0 rejected (or not a tail id), 1 accepted, 2 too close to call; the id in .y.
fn tailAttempt(seed: u32, k: u32, rowBase: u32, lref: f32, idref: u32) -> vec2<u32> {
  let x = pcg(seed + k);
  if (x >= (0xffffffffu / P.vocab) * P.vocab) { return vec2<u32>(0u, 0u); }
  let id = x % P.vocab;
  let l = logits[rowBase + id];
  // Non-finite logits are never drawn (tested on the bits: compilers may assume floats are finite).
  if ((bitcast<u32>(l) & 0x7fffffffu) >= 0x7f800000u) { return vec2<u32>(0u, id); }
  if (l > lref || (l == lref && id <= idref)) { return vec2<u32>(0u, id); }
  let a = f32(2u * (pcg(x) >> 9u) + 1u) * (1.0 / 16777216.0);
  let t = (l - lref) * P.invT;
  let e = exp(t);
  let tol = e * (${TAIL_TOL_ULPS}.0 + ${TAIL_TOL_ULPS_PER_X}.0 * abs(t)) * 1.1920929e-7;
  if (abs(a - e) <= tol) { return vec2<u32>(2u, id); }
  return vec2<u32>(select(0u, 1u, a < e), id);
}

// True when x is too close to the boundary b for f32 and float64 to be sure to agree on which side it is.
fn near(x: f32, b: f32) -> bool { return abs(x - b) < P.eps; }

@compute @workgroup_size(${TAIL_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wg.x;
  let entry = row * ${DRAW_ENTRY_WORDS}u;
  let plan = step[entry + 2u];
  if (plan != P.plan && plan != ${DRAW_ANY_PLAN}u) { return; }
  let u = bitcast<f32>(step[entry]);
  let at = step[entry + 1u] * ${DRAW_LOG_WORDS}u;
  let c0 = row * P.k;
  let s0 = row * 3u;
  if (lid == 0u) {
    var tail = 0u;
    var pick = 0u;
    var flag = 0u;
    if (P.greedy == 0u) {
      var p: array<f32, 64>;
      var L = 0u;
      for (var i = 0u; i < P.k; i++) { if (candIds[c0 + i] != NONE) { L = i + 1u; } }
      let lseT = statsT[s0] + log(statsT[s0 + 1u]);
      for (var i = 0u; i < L; i++) { p[i] = exp(candVals[c0 + i] * P.invT - lseT); }
      let complete = L >= P.vocab;
      var kEff = P.vocab;
      if (P.topK > 0u) { kEff = min(P.topK, P.vocab); }
      if (kEff > L && !complete && (P.topK > 0u || P.topP >= 1.0)) {
        // Candidates do not determine the distribution; pure temperature can still pick within their mass.
        flag = 1u;
        if (P.topK == 0u && P.topP >= 1.0) {
          var cum = 0.0;
          var inside = false;
          for (var i = 0u; i < L; i++) {
            let prev = cum;
            cum += p[i];
            if (u < cum) {
              pick = i;
              inside = true;
              if (!near(u, cum) && !near(u, prev)) { flag = 0u; }
              break;
            }
          }
          // Past the candidates' mass, clear of its end: the tail draw decides.
          if (!inside && !near(u, cum) && L == P.k) { tail = 1u; }
        }
      } else {
        var n = min(kEff, L);
        var mass = 1.0;
        if (kEff <= L) {
          mass = 0.0;
          for (var i = 0u; i < n; i++) { mass += p[i]; }
        }
        for (var i = 0u; i < n; i++) { p[i] = p[i] / mass; }
        if (P.topP < 1.0) {
          var cum = 0.0;
          var keep = 0u;
          while (keep < n && cum < P.topP) {
            // The CPU stops where its float64 cum first reaches topP: near it, f32 may stop elsewhere.
            if (near(cum, P.topP)) { flag = 1u; }
            cum += p[keep];
            keep++;
          }
          if (near(cum, P.topP)) { flag = 1u; }
          // The nucleus reaches past the candidates: only the whole row decides.
          if (cum < P.topP && !(kEff <= L)) { flag = 1u; }
          n = keep;
        }
        var z = 0.0;
        for (var i = 0u; i < n; i++) { z += p[i]; }
        var cum = 0.0;
        var found = false;
        for (var i = 0u; i < n; i++) {
          let prev = cum;
          cum += p[i] / z;
          if (u < cum) {
            pick = i;
            found = true;
            if (near(u, cum) || near(u, prev)) { flag = 1u; }
            break;
          }
        }
        // u within rounding of 1: the CPU takes the last nonzero probability; leave it to the CPU.
        if (!found) { flag = 1u; }
      }
    }
    wPick = pick;
    wFlag = flag;
    wTail = tail;
    atomicStore(&wFirst, NONE);
  }
  let tail = workgroupUniformLoad(&wTail);
  var pick = workgroupUniformLoad(&wPick);
  var flag = wFlag;
  var id = candIds[c0 + min(pick, P.k - 1u)];
  var logit = candVals[c0 + min(pick, P.k - 1u)];
  if (tail == 1u) {
    let lref = candVals[c0 + P.k - 1u];
    let idref = candIds[c0 + P.k - 1u];
    let seed = pcg(bitcast<u32>(u));
    let rowBase = row * P.vocab;
    for (var r = 0u; r < ${TAIL_ROUNDS}u; r++) {
      let k = r * ${TAIL_WG}u + lid;
      if (tailAttempt(seed, k, rowBase, lref, idref).x != 0u) { atomicMin(&wFirst, k); }
      if (workgroupUniformLoad(&wFirst) != NONE) { break; }
    }
    let first = atomicLoad(&wFirst);
    flag = 1u;
    if (first != NONE) {
      let t = tailAttempt(seed, first, rowBase, lref, idref);
      id = t.y;
      logit = logits[rowBase + id];
      if (t.x == 1u) { flag = 0u; }
    }
  }
  if (lid != 0u) { return; }
  outIds[row] = id;
  drawLog[at] = id;
  drawLog[at + 1u] = flag;
  drawLog[at + 2u] = bitcast<u32>(logit);
  drawLog[at + 3u] = bitcast<u32>(stats1[s0]);
  drawLog[at + 4u] = bitcast<u32>(stats1[s0 + 1u]);
}
`;
