// Which web-llm build to load. MLC publishes each model in a q4f16 build (needs WGSL `shader-f16`) and a
// q4f32 build (runs everywhere, more memory and slower). We pick from the GPU's real capabilities rather
// than letting web-llm fail with ShaderF16SupportError after the download has started.
import type { AppConfig, ModelRecord } from '@mlc-ai/web-llm';

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

export class ModelSelectionError extends Error {
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
