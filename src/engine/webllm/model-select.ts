// Which web-llm build to load. MLC publishes each model in a q4f16 build (needs WGSL `shader-f16`) and a
// q4f32 build (runs everywhere, more memory and slower). We pick from the GPU's real capabilities rather
// than letting web-llm fail with ShaderF16SupportError after the download has started.
import { AgentFlowError, type ErrorCategory } from '../../errors';
import type { AppConfig, ModelRecord } from '@mlc-ai/web-llm';
import { MLC_Q4_QUANTIZATIONS } from '../../io/mlc';

export const DEFAULT_WEBLLM_MODEL = 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC';

/** The f32 sibling of an f16 build id ('…-q4f16_1-MLC' → '…-q4f32_1-MLC'), or null if it is not an f16 build. */
export function f32Sibling(modelId: string): string | null {
  const m = /^(.*-q\d)f16((?:_\d+)?)(-MLC.*)$/.exec(modelId);
  return m ? `${m[1]}f32${m[2]}${m[3]}` : null;
}

export function needsShaderF16(record: Pick<ModelRecord, 'model_id' | 'required_features'>): boolean {
  return (record.required_features ?? []).includes('shader-f16') || f32Sibling(record.model_id) !== null;
}

export interface ModelChoice {
  modelId: string;
  /** Set when the requested build was swapped for its f32 sibling; says why, for the UI. */
  fallbackReason?: string;
}

export class ModelSelectionError extends AgentFlowError {
  override readonly category: ErrorCategory = 'model-selection';
  constructor(message: string) {
    super(message);
    this.name = 'ModelSelectionError';
  }
}

/**
 * Picks the model build to load: `requested` (default DEFAULT_WEBLLM_MODEL) when the GPU can run it,
 * else its q4f32 sibling. Throws naming the model when it is not in `appConfig` or cannot run here.
 */
export function selectWebLlmModel(gpu: { f16: boolean }, appConfig: AppConfig, requested: string = DEFAULT_WEBLLM_MODEL): ModelChoice {
  const byId = new Map(appConfig.model_list.map((r) => [r.model_id, r]));
  const record = byId.get(requested);
  if (!record) {
    const similar = [...byId.keys()].filter((id) => id.split('-')[0] === requested.split('-')[0]).slice(0, 8);
    throw new ModelSelectionError(
      `web-llm model '${requested}' is not in the model list${similar.length ? `; similar ids: ${similar.join(', ')}` : ''}`,
    );
  }
  if (gpu.f16 || !needsShaderF16(record)) return { modelId: requested };
  const sibling = f32Sibling(requested);
  if (sibling && byId.has(sibling)) {
    return { modelId: sibling, fallbackReason: `this GPU has no shader-f16, so '${sibling}' is used instead of '${requested}'` };
  }
  throw new ModelSelectionError(`web-llm model '${requested}' needs the WebGPU feature shader-f16, which this GPU lacks, and no f32 build of it is listed`);
}

/** Where the planner reads a web-llm build so that both engines share one download (sharedUrlSource). */
export interface SharedPlannerSource {
  /** The build web-llm will load (requested, or its q4f32 sibling on a GPU without shader-f16). */
  modelId: string;
  /** The record's model URL: web-llm's cache keys derive from it. */
  url: string;
  /** web-llm's cache backend, when the planner can share it; 'none' (OPFS, cross-origin): it cannot. */
  webllmCache: 'cache' | 'indexeddb' | 'none';
  fallbackReason?: string;
}

/**
 * The planner source for web-llm model `requested` on this GPU: the same build selectWebLlmModel picks
 * for the shared engine, at its record's URL, in web-llm's cache backend. The planner then reads the
 * 4-bit weights web-llm downloads (or downloads them into web-llm's caches first): one download.
 */
export function plannerSourceForWebLlmModel(gpu: { f16: boolean }, appConfig: AppConfig, requested: string): SharedPlannerSource {
  const choice = selectWebLlmModel(gpu, appConfig, requested);
  const record = appConfig.model_list.find((r) => r.model_id === choice.modelId) as ModelRecord;
  if (!MLC_Q4_QUANTIZATIONS.some((q) => choice.modelId.includes(`-${q}-MLC`))) {
    throw new ModelSelectionError(`the planner reads web-llm's ${MLC_Q4_QUANTIZATIONS.join(' and ')} builds only; '${choice.modelId}' is neither`);
  }
  const backend = appConfig.cacheBackend ?? 'cache';
  const webllmCache = backend === 'cache' || backend === 'indexeddb' ? backend : 'none';
  return { modelId: choice.modelId, url: record.model, webllmCache, ...(choice.fallbackReason ? { fallbackReason: choice.fallbackReason } : {}) };
}
