// The draw of a sampled token on the GPU, so a decode loop can encode the next step before it knows the
// token: the token id goes straight into the next step's ids buffer and into a log the CPU reads later.
// It mirrors the CPU rule (draw.ts: candidateDistribution + pickIndex, and pickFromPrefix for pure
// temperature) in f32 over the final top-k pass's sorted candidates. f32 and the CPU's float64 can only
// disagree when u, or the top-p cut, lies within rounding of an interval boundary; the kernel then sets
// `flag` instead of guessing (and when the candidates cannot decide at all), and the CPU redoes that step
// with the float64 rule. So a token taken from the GPU is exactly the one the CPU rule gives.
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

const NONE = 0xffffffffu;

// True when x is too close to the boundary b for f32 and float64 to be sure to agree on which side it is.
fn near(x: f32, b: f32) -> bool { return abs(x - b) < P.eps; }

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.x;
  let entry = row * ${DRAW_ENTRY_WORDS}u;
  let plan = step[entry + 2u];
  if (plan != P.plan && plan != ${DRAW_ANY_PLAN}u) { return; }
  let u = bitcast<f32>(step[entry]);
  let at = step[entry + 1u] * ${DRAW_LOG_WORDS}u;
  let c0 = row * P.k;
  let s0 = row * 3u;
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
        for (var i = 0u; i < L; i++) {
          let prev = cum;
          cum += p[i];
          if (u < cum) {
            pick = i;
            if (!near(u, cum) && !near(u, prev)) { flag = 0u; }
            break;
          }
        }
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
  let id = candIds[c0 + pick];
  outIds[row] = id;
  drawLog[at] = id;
  drawLog[at + 1u] = flag;
  drawLog[at + 2u] = bitcast<u32>(candVals[c0 + pick]);
  drawLog[at + 3u] = bitcast<u32>(stats1[s0]);
  drawLog[at + 4u] = bitcast<u32>(stats1[s0 + 1u]);
}
`;
