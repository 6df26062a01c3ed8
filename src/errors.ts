// Every error the runtime, loaders, tools and store throw on purpose is an AgentFlowError with a category, so
// the app and an embedding page can react to what went wrong (offer a reload, free storage, pick a smaller
// model) without parsing messages. The classes live beside the code that throws them; this module holds the
// base class, the categories and errorCategory(), which also names the browser's own errors.

export type ErrorCategory =
  /** WebGPU is missing or refused an adapter/device. */
  | 'webgpu-unavailable'
  /** The GPU device was lost (driver reset, another tab, the OS reclaiming memory). */
  | 'device-lost'
  /** A GPU read did not settle within the runtime's stallTimeoutMs (a hung driver or queue). */
  | 'gpu-stalled'
  | 'gpu-out-of-memory'
  | 'shader-compile'
  /** A worker behind an engine or tool died; reloading starts a new one. */
  | 'worker-gone'
  /** A prompt or question does not fit the model's context window. */
  | 'context-exceeded'
  /** The model has no chat template, so it can score but not chat. */
  | 'no-chat-template'
  /** A model file is malformed (safetensors header, MLC manifest, ...). */
  | 'bad-model-file'
  /** A model file's bytes do not match their checksum or size; re-download it. */
  | 'corrupt-file'
  | 'missing-file'
  /** The files could not be fetched or read (network, offline, permissions). */
  | 'source'
  | 'bad-config'
  | 'bad-adapter'
  /** NaN or infinity in weights or an adapter, or activations that overflowed float32 (NonFiniteActivationError). */
  | 'non-finite'
  | 'bad-checkpoint'
  | 'model-not-cached'
  | 'model-selection'
  /** web-llm failed (its own code says where: download, load, generate...). */
  | 'web-llm'
  /** IndexedDB would not open, or a write failed. */
  | 'storage'
  /** Browser storage is full. */
  | 'quota'
  | 'engine-mismatch'
  | 'tool'
  | 'bad-setting'
  | 'usage'
  /** The user (or a time limit) stopped it. */
  | 'aborted'
  | 'unknown';

export abstract class AgentFlowError extends Error {
  abstract readonly category: ErrorCategory;
}

/** The category of any thrown value: ours, or the browser's QuotaExceededError / AbortError. */
export function errorCategory(e: unknown): ErrorCategory {
  if (e instanceof AgentFlowError) {
    // A storage error caused by a full disk is a quota error to the user.
    if (e.category === 'storage' && errorCategory((e as { cause?: unknown }).cause) === 'quota') return 'quota';
    return e.category;
  }
  const name = (e as { name?: unknown } | null)?.name;
  if (name === 'QuotaExceededError') return 'quota';
  if (name === 'AbortError' || name === 'TimeoutError') return 'aborted';
  return 'unknown';
}
