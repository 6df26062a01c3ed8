// The figures issue 17's README table needs, pulled from the parts' JSON into summary.json (bench/gpu-all.ts),
// so a GPU session reads one file: per bench part decode / prefill / score tok/s and their share of the
// bandwidth floor, the training step, and the training step's ratio to PyTorch + PEFT measured in the same call.
// Pure; a part that is missing or printed something else gives nulls, never an error (its status says why).

/** A number at a path in a parsed JSON value, or null. */
function at(v: unknown, ...path: Array<string | number>): number | null {
  let x = v;
  for (const k of path) {
    if (x === null || typeof x !== 'object') return null;
    x = (x as Record<string | number, unknown>)[k];
  }
  return typeof x === 'number' && Number.isFinite(x) ? x : null;
}

/** A string at a path, or null. */
function atText(v: unknown, ...path: string[]): string | null {
  let x = v;
  for (const k of path) {
    if (x === null || typeof x !== 'object') return null;
    x = (x as Record<string, unknown>)[k];
  }
  return typeof x === 'string' ? x : null;
}

const round = (x: number | null, digits = 3): number | null => (x === null ? null : Number(x.toPrecision(digits + 1)));

export interface BenchHeadline {
  decodeTokPerS: number | null;
  decodePctOfFloor: number | null;
  groupDecodeTokPerS: number | null;
  groupDecodePctOfFloor: number | null;
  prefillTokPerS: number | null;
  scoreTokPerS: number | null;
  trainStepMs: number | null;
  /** The step's two GPU parts: the frozen model's log-probs (the KL term's reference) and the update. */
  refLogprobsMs: number | null;
  updateMs: number | null;
  trainPeakMiB: number | null;
  memoryAtContextMiB: number | null;
}

/** The first model's figures of a bench part's JSON (run.sh all gives each bench part one model). */
export function benchHeadline(json: unknown): BenchHeadline {
  const r = (...p: Array<string | number>): number | null => at(json, 'results', 0, ...p);
  const pct = (x: number | null): number | null => (x === null ? null : round(100 * x));
  return {
    decodeTokPerS: round(r('speed', 'decodeTokensPerSec')),
    decodePctOfFloor: pct(r('speed', 'bandwidthFloor', 'fractionOfFloor')),
    groupDecodeTokPerS: round(r('speed', 'batchDecode', 'group', 'tokensPerSec')),
    groupDecodePctOfFloor: pct(r('speed', 'batchDecode', 'group', 'bandwidthFloor', 'fractionOfFloor')),
    prefillTokPerS: round(r('speed', 'prefillTokensPerSec')),
    scoreTokPerS: round(r('speed', 'scoreTokensPerSec')),
    trainStepMs: round(r('training', 'trainStepMs')),
    refLogprobsMs: round(r('training', 'stepMs', 'refLogprobs')),
    updateMs: round(r('training', 'stepMs', 'update')),
    trainPeakMiB: round(r('training', 'trainGpuPeakMiB')),
    memoryAtContextMiB: round(r('memoryAtContext', 'totalMiB')),
  };
}

/**
 * Headlines of a run: `read(part)` gives a part's parsed JSON (null when absent). Bench parts are named
 * bench-<shape>-<q4|f16>[-tiles], PyTorch parts peft-<shape>; trainVsPeft is PEFT's step time over ours (1 = as fast).
 */
export function headlines(partNames: string[], read: (part: string) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const adapter = read('adapter') as { subgroupMatrix?: { offered?: unknown; offeredWithUnsafeApis?: unknown } } | null;
  if (adapter) out.subgroupMatrix = { offered: adapter.subgroupMatrix?.offered ?? null, offeredWithUnsafeApis: adapter.subgroupMatrix?.offeredWithUnsafeApis ?? null };
  // updateRatio: PEFT's step has no reference pass, so the update alone is the like-for-like figure.
  const trainVsPeft: Array<{ part: string; peftStepMs: number; stepMs: number; ratio: number; updateRatio: number | null }> = [];
  for (const name of partNames) {
    const m = /^bench-(.+)-(q4|f16)(-tiles)?$/.exec(name);
    if (!m) continue;
    const h = benchHeadline(read(name));
    out[name] = h;
    const peftMs = at(read(`peft-${m[1]}`), 'trainStepMs');
    if (peftMs !== null && h.trainStepMs !== null && h.trainStepMs > 0) trainVsPeft.push({ part: name, peftStepMs: round(peftMs)!, stepMs: h.trainStepMs, ratio: round(peftMs / h.trainStepMs)!, updateRatio: h.updateMs ? round(peftMs / h.updateMs) : null });
  }
  for (const name of partNames.filter((n) => n.startsWith('peft-'))) {
    const j = read(name);
    out[name] = { trainStepMs: round(at(j, 'trainStepMs')), decodeTokPerS: round(at(j, 'decodeTokensPerSec')) };
  }
  out.trainVsPeft = trainVsPeft;
  const e2e = read('e2e-0.5b-q4');
  if (e2e) out['e2e-0.5b-q4'] = { stepSeconds: round(at(e2e, 'results', 0, 'e2e', 'steps', 0, 'stepSeconds')), rolloutSeconds: round(at(e2e, 'results', 0, 'e2e', 'steps', 0, 'rolloutSeconds')), updateSeconds: round(at(e2e, 'results', 0, 'e2e', 'steps', 0, 'updateSeconds')) };
  const cd = read('constrained-0.5b-q4');
  if (cd) {
    out['constrained-0.5b-q4'] = {
      freeTokPerS: round(at(cd, 'decode', 'free', 'tokensPerSec')),
      schemaTokPerS: round(at(cd, 'decode', 'constrained', 'tokensPerSec')),
      schemaDrawnTokPerS: round(at(cd, 'decode', 'constrained', 'drawnTokensPerSec')),
      ratio: round(at(cd, 'decode', 'ratio')),
      drawnRatio: round(at(cd, 'decode', 'drawnRatio')),
      grammarMsPerDrawnToken: round(at(cd, 'decode', 'grammarMsPerDrawnToken')),
      maskedDrawMsPerToken: round(at(cd, 'grammar', 'maskedDrawMsPerToken')),
    };
  }
  const dp = read('decode-profile');
  if (dp) out['decode-profile'] = { dispatchesPerToken: at(dp, 'dispatchesPerToken'), gpuMsPerTokenNoReadback: round(at(dp, 'gpuMsPerTokenNoReadback')), encodeMsPerToken: round(at(dp, 'encodeMsPerToken')), generateTokPerS: round(at(dp, 'generateTokensPerSec')) };
  for (const name of ['train-profile', 'train-profile-tiles']) {
    const tp = read(name);
    if (!tp) continue;
    // The forward's frozen-weight matmul kinds (tensor-core matmul_mma on f16 copies where offered, q4_matmul_mma
    // without them; the f32 tiles under AGENTFLOW_SUBGROUP_MATRIX=0) and the input gradients' (backward, split-K, mma).
    const kinds = (tp as { byKind?: Record<string, { ms?: unknown }> }).byKind ?? {};
    const kindMs = (re: RegExp): number | null => {
      const ms = Object.entries(kinds).filter(([k]) => re.test(k)).map(([, v]) => (typeof v.ms === 'number' ? v.ms : 0));
      return ms.length ? round(ms.reduce((a, b) => a + b, 0)) : null;
    };
    out[name] = { realUpdateMs: round(at(tp, 'realUpdateMs')), gpuMs: round(at(tp, 'gpuMs')), encodeMs: round(at(tp, 'encodeMs')), dispatches: at(tp, 'dispatches'), forwardMatmulMs: kindMs(/^(q4_)?matmul_(tiled(128)?|mma(64)?)$/), backwardMatmulMs: kindMs(/^(q4_)?matmul_backward/) };
  }
  const fc = read('f16-check');
  if (fc) {
    const b = (k: string): boolean | null => {
      const v = (fc as Record<string, unknown>)[k];
      return typeof v === 'boolean' ? v : null;
    };
    const check: Record<string, unknown> = { f16Offered: b('f16Offered'), compared: b('compared'), agree: b('agree'), logitsRelative: at(fc, 'logitsRelative'), argmaxSame: b('argmaxSame'), greedySameTokens: at(fc, 'greedySameTokens'), scoreMaxAbsDiff: at(fc, 'scoreMaxAbsDiff') };
    // The LoRA gradients against the f32 path's, where the part computed them (bench/grad-agreement.ts).
    if ((fc as { gradients?: unknown }).gradients) check.gradients = gradHeadline((fc as { gradients: unknown }).gradients);
    out['f16-check'] = check;
    const sgm = (fc as { sgm?: unknown }).sgm;
    // The subgroup-matrix path against the f32 path (bench/f16-agreement.ts), when the part ran it.
    if (sgm !== null && typeof sgm === 'object') check.sgm = sgmCheckHeadline(sgm as Record<string, unknown>);
  }
  const sg = read('sgm-probe');
  if (sg) out['sgm-probe'] = sgmProbeHeadline(sg);
  const pp = read('prefill-profile');
  if (pp) {
    const prompt = at(pp, 'prompt');
    const list = (pp as { prefill?: unknown }).prefill;
    const chunks = Array.isArray(list) ? (list as Array<{ gpuMs?: unknown }>) : [];
    const prefillMs = chunks.reduce((a, c) => a + (typeof c.gpuMs === 'number' ? c.gpuMs : NaN), 0);
    out['prefill-profile'] = {
      prompt,
      prefillGpuMs: chunks.length && Number.isFinite(prefillMs) ? round(prefillMs) : null,
      prefillTokPerS: chunks.length && typeof prompt === 'number' && Number.isFinite(prefillMs) && prefillMs > 0 ? round((prompt * 1000) / prefillMs) : null,
      scoreGpuMs: round(at(pp, 'score', 'gpuMs')),
      // The same prompt through generate() (wall, to the first token): far above prefillTokPerS is host cost.
      generatePrefillTokPerS: round(at(pp, 'generate', 'tokensPerSec')),
    };
  }
  return out;
}

/** offered, agree (null when not run), how far from the f32 path, and whether its kernel was built at all. */
/** A gradient comparison's relative L2 error, cosine and worst tensor (or the error that stopped it). */
function gradHeadline(g: unknown): Record<string, unknown> {
  const e = atText(g, 'error');
  if (e !== null) return { error: e };
  return {
    relativeL2: at(g, 'relativeL2'),
    cosine: at(g, 'cosine'),
    oneMinusCosine: at(g, 'oneMinusCosine'),
    worstTensor: atText(g, 'worstTensor', 'name'),
    worstRelativeL2: at(g, 'worstTensor', 'relativeL2'),
    // The worst tensor's norm against the whole gradient's: a near-zero tensor's relative error says little.
    worstNormShare: (() => {
      const t = at(g, 'worstTensor', 'refNorm');
      const all = at(g, 'refNorm');
      return t !== null && all ? round(t / all) : null;
    })(),
    largestErrorTensor: atText(g, 'largestError', 'name'),
    largestErrorShare: at(g, 'largestError', 'share'),
    nonFinite: at(g, 'nonFinite'),
  };
}

export function sgmCheckHeadline(sgm: Record<string, unknown>): Record<string, unknown> {
  const b = (k: string): boolean | null => (typeof sgm[k] === 'boolean' ? (sgm[k] as boolean) : null);
  const pipelines = sgm.pipelines;
  return {
    ...(sgm.gradients ? { gradients: gradHeadline(sgm.gradients) } : {}),
    offered: b('offered'),
    agree: b('agree'),
    logitsRelative: at(sgm, 'logitsRelative'),
    argmaxSame: b('argmaxSame'),
    greedySameTokens: at(sgm, 'greedySameTokens'),
    scoreMaxAbsDiff: at(sgm, 'scoreMaxAbsDiff'),
    kernelBuilt: Array.isArray(pipelines) ? pipelines.length > 0 : null,
    // generateBatch = generate alone, to the bit, on this path (packed prefills share tensor-core blocks).
    batchSameAsAlone: b('batchSameAsAlone'),
    // Per shape: tensor-core over tiled speed-up, and the tensor-core kernel's error against float64.
    kernel: Array.isArray(sgm.kernel)
      ? (sgm.kernel as Array<Record<string, unknown>>).map((r) => ({
          shape: r.shape,
          speedup: at(r, 'speedup'),
          mmaTflops: at(r, 'mma', 'tflops'),
          tiledTflops: at(r, 'tiled', 'tflops'),
          mmaErrorOverAbsSum: at(r, 'mma', 'check', 'maxErrorOverAbsSum'),
          // The f16-copy kernel's variants (label: TFLOP/s), when the table has them.
          f16mma: Array.isArray(r.f16mma) ? Object.fromEntries((r.f16mma as Array<Record<string, unknown>>).map((f) => [String(f.label), at(f, 'tflops')])) : null,
        }))
      : typeof sgm.kernel === 'string' ? sgm.kernel : null,
    // Input gradients: tensor-core over tiled (split-K both), and the tensor-core kernel's error.
    kernelBackward: Array.isArray(sgm.kernelBackward)
      ? (sgm.kernelBackward as Array<Record<string, unknown>>).map((r) => ({ shape: r.shape, speedup: at(r, 'speedup'), mmaTflops: at(r, 'mma', 'tflops'), tiledTflops: at(r, 'tiled', 'tflops'), mmaErrorOverAbsSum: at(r, 'mma', 'check', 'maxErrorOverAbsSum') }))
      : typeof sgm.kernelBackward === 'string' ? sgm.kernelBackward : null,
  };
}

/**
 * The subgroup-matrix probe (bench/subgroup-matrix-probe.ts): whether the feature is offered, the adapter's
 * matrix configs, and per training shape the fastest variant that passed the float64 check against the f32
 * tiled matmul; maxRelError is the largest of those variants' errors.
 */
export function sgmProbeHeadline(json: unknown): Record<string, unknown> {
  const j = (json ?? {}) as { offered?: unknown; configs?: unknown; best?: unknown; errors?: unknown; interrupted?: unknown };
  const configs = Array.isArray(j.configs)
    ? (j.configs as Array<Record<string, unknown>>).map((c) => `${String(c.componentType)}->${String(c.resultComponentType)} ${String(c.M)}x${String(c.N)}x${String(c.K)}`)
    : null;
  const shapes = (Array.isArray(j.best) ? (j.best as unknown[]) : []).map((b) => ({
    shape: (b as { shape?: unknown }).shape ?? null,
    tflops: round(at(b, 'best', 'tflops')),
    baselineTflops: round(at(b, 'baselineTflops')),
    speedup: round(at(b, 'speedup')),
    variant: ((b as { best?: { variant?: unknown } }).best?.variant as string | undefined) ?? null,
    config: ((b as { best?: { config?: unknown } }).best?.config as string | undefined) ?? null,
  }));
  const errs = (Array.isArray(j.best) ? (j.best as unknown[]) : []).map((b) => at(b, 'best', 'maxRelError')).filter((x): x is number => x !== null);
  return {
    offered: typeof j.offered === 'boolean' ? j.offered : null,
    configs,
    shapes,
    maxRelError: errs.length ? round(Math.max(...errs)) : null,
    errors: Array.isArray(j.errors) ? j.errors.length : null,
    ...(j.interrupted ? { interrupted: j.interrupted } : {}),
  };
}
