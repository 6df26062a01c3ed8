// Model I/O for the planner engine: what the runtime, trainer and UI import.
export { loadCheckpoint, loadAdapter, mlcAsCheckpoint, type Checkpoint, type TensorHandle, type TokenizerFiles, type LoadOptions } from './checkpoint.ts';
export { parseQwen2Config, checkWeights, expectedQwen2Tensors, ConfigError, type Qwen2Config } from './config.ts';
export {
  parseAdapter,
  parseAdapterConfig,
  exportAdapter,
  loraKey,
  loraScale,
  moduleShape,
  orderedPairs,
  targetsModule,
  LORA_MODULES,
  MODULE_PATH,
  AdapterError,
  type LoraAdapter,
  type LoraAdapterConfig,
  type LoraPair,
  type LoraModule,
} from './peft.ts';
export {
  readSafetensors,
  writeSafetensors,
  parseSafetensorsHeader,
  readHeaderLength,
  tensorToF16,
  tensorToF32,
  SafetensorsError,
  type SafetensorsFile,
  type SafetensorsHeader,
  type TensorDescriptor,
  type WritableTensor,
} from './safetensors.ts';
export { NonFiniteError } from './finite.ts';
export { parseShardIndex, SHARD_INDEX_FILE, type ShardIndex } from './shards.ts';
export {
  directorySource,
  pickedFilesSource,
  urlSource,
  readOptionalJson,
  MissingFileError,
  SourceError,
  MODEL_CACHE_NAME,
  type FileSource,
  type ProgressCallback,
  type UrlSourceOptions,
} from './sources.ts';
export {
  loadMlcCheckpoint,
  CorruptShardError,
  parseTensorCache,
  parseMlcChatConfig,
  checkMlcQwen2,
  expectedMlcQwen2Tensors,
  dequantizeQ4f16_1,
  dequantizeQ4,
  MLC_Q4_QUANTIZATIONS,
  type MlcQ4Quantization,
  readMlcRecord,
  splitRows,
  type MlcCheckpoint,
  type MlcManifest,
  type MlcRecord,
} from './mlc.ts';
export { sharedUrlSource, webllmCacheFor, webllmModelUrl, WEBLLM_CONFIG_CACHE, WEBLLM_MODEL_CACHE, type SharedUrlSource, type SharedUrlSourceOptions } from './webllm-cache.ts';
