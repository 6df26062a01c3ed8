// Sharded Hugging Face checkpoints: model.safetensors.index.json's weight_map says which shard file holds
// each tensor (transformers' modeling_utils writes {"metadata": {...}, "weight_map": {tensor: file}}).
import { isModelFileName, MODEL_FILE_NAME_RULE } from './file-names.ts';

export const SHARD_INDEX_FILE = 'model.safetensors.index.json';
export const SINGLE_FILE = 'model.safetensors';

export interface ShardIndex {
  /** Tensor name -> shard file name. */
  weightMap: Map<string, string>;
  /** Distinct shard files, in first-mention order. */
  files: string[];
}

export function parseShardIndex(json: unknown, file = SHARD_INDEX_FILE): ShardIndex {
  const wm = (json as { weight_map?: unknown } | null)?.weight_map;
  if (!wm || typeof wm !== 'object' || Array.isArray(wm)) throw new Error(`${file}: missing 'weight_map' object`);
  const weightMap = new Map<string, string>();
  const files: string[] = [];
  for (const [tensor, shard] of Object.entries(wm)) {
    if (!isModelFileName(shard)) {
      throw new Error(`${file}: weight_map entry for '${tensor}' is ${JSON.stringify(shard)}, not ${MODEL_FILE_NAME_RULE}; refused`);
    }
    weightMap.set(tensor, shard);
    if (!files.includes(shard)) files.push(shard);
  }
  if (!weightMap.size) throw new Error(`${file}: 'weight_map' is empty`);
  return { weightMap, files };
}
