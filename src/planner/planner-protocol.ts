// What crosses the planner worker's boundary: the calls the worker answers (PlannerWorkerApi, served by
// PlannerHost in workers/planner.worker.ts) and the plain data they take and return. Both sides import it
// from here; neither imports the other. Only structured-cloneable data, Comlink-proxied progress callbacks
// and each generation's own MessagePort (its GenerationLine) pass.
import type { ChatTemplateSource } from '../engine/load-checkpoint';
import type { Qwen2Config } from '../io/qwen2-config';
import type { GenerateTokensOptions, GpuMemoryReport, TokenGeneration } from '../engine/runtime';
import type { ChatMessage, GenerateOptions, GenerationResult, LoadProgress } from '../engine/chat-engine';
import type { ProxyMarked } from 'comlink';
import type { TrainingHost } from '../trainer/training-host';

export type { TrainAdapterSpec, TrainStartOptions } from '../trainer/training-host';

/** The training calls of the planner worker's optimizer (PlannerWorkerApi.training). */
export type PlannerTraining = Pick<TrainingHost, 'trainStart' | 'trainStep' | 'trainCheckpoint' | 'trainInfo' | 'exportAdapter' | 'trainStop'>;

/** Where the model (or an adapter) comes from. */
export type ModelSpec =
  | {
      kind: 'url';
      url: string;
      /** Which of web-llm's caches holds (or receives) the MLC files: its engine's appConfig.cacheBackend. */
      webllmCache?: 'cache' | 'indexeddb' | 'none';
      /** Read only what this browser has cached; a missing file fails the load with a NotCachedError. */
      cacheOnly?: boolean;
    }
  | { kind: 'files'; files: File[] }
  | { kind: 'bytes'; files: Record<string, Uint8Array>; label?: string };

export interface PlannerInfo {
  id: string;
  config: Qwen2Config;
  /** False when the checkpoint has no tokenizer or chat template: score/generateIds work, chat does not. */
  hasTokenizer: boolean;
  /**
   * Where the chat template comes from: tokenizer_config.json or chat_template.jinja (Hugging Face's), or,
   * for a web-llm build whose tokenizer_config.json is not on this machine nor reachable, the template
   * rebuilt from mlc-chat-config.json's conv_template (as web-llm renders prompts). Null without chat.
   */
  chatTemplateSource: ChatTemplateSource | null;
  /** Why chat is unavailable (no tokenizer.json, no chat template), or null. */
  noChat: string | null;
  adapters: string[];
  activeAdapter: string | null;
  memory: GpuMemoryReport;
  f16: boolean;
  /** The most tokens a prompt and its reply may take together (the KV cache's length). */
  maxContext: number;
  /**
   * Warnings about what was loaded: the model's (shards read without an md5sum to check) and each adapter's
   * added since (made for another base model), for the page to show beside the model.
   */
  notes: string[];
}

/** The runtime's decode counters (Qwen2Runtime.decodeCounters) and how many sequences a step can take. */
export interface DecodeStats {
  steps: number;
  /** Sequences' rows the steps computed: rows / steps is how many sequences a step served on average. */
  rows: number;
  padRows: number;
  maxRows: number;
}

export interface LoadOptions {
  name?: string;
  maxContext?: number;
  maxBatchRows?: number;
  /**
   * KV-cache rows that overlapping generations decoded together may use (RuntimeOptions.batchContext).
   * Default twice the context: four rollouts' planner turns of ~1,500 prompt + 256 new tokens fit one
   * batch. The cache grows to it only when a batch needs it (24 KiB a row for Qwen2.5-0.5B).
   */
  batchContext?: number;
}

/**
 * One generation's own channel to the page, transferred with its call (web-llm's pull streaming in
 * miniature): the page's only message on it is its cancel (Stop, the AbortSignal's one crossing; the worker
 * turns it back into one AbortSignal), the worker's are GenerationLineMessages. Sent only when the page has a
 * signal or a token callback.
 */
export interface GenerationLine {
  port: MessagePort;
  /** The page streams tokens: the worker posts each one. */
  tokens: boolean;
  /**
   * The page's signal had already aborted when it made the call. A cancel posted before the port crossed
   * reaches the worker only after the call has started; this makes it stop before its first token, as the
   * page asked.
   */
  aborted: boolean;
}

/** What the worker posts on a GenerationLine: each streamed token's callback arguments, then `end` once. */
export type GenerationLineMessage = { token: unknown[] } | { end: true };

/** Generation options that cross the worker boundary (no AbortSignal, no functions). */
export type RemoteGenerateOptions = Omit<GenerateOptions, 'signal'>;
// A constraint is live grammar state (wasm handles): it cannot cross; chat's jsonSchema builds one in the worker.
export type RemoteTokenOptions = Omit<GenerateTokensOptions, 'signal' | 'onToken' | 'onLogits' | 'constraint'>;

/**
 * The planner worker's calls. Progress comes back through callbacks (Comlink proxies on the page's side); a
 * generation's tokens and its cancel travel on its GenerationLine, since an AbortSignal cannot cross.
 */
export interface PlannerWorkerApi {
  /** Loads config, weights and (when present) the tokenizer; replaces any model loaded before. */
  load(spec: ModelSpec, opts?: LoadOptions, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo>;
  info(): Promise<PlannerInfo>;
  /** Loads a PEFT adapter folder under `id` (validated against the base model); does not activate it. */
  loadAdapter(id: string, spec: ModelSpec, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo>;
  /** An adapter from its two PEFT files' contents (e.g. a checkpoint kept in IndexedDB). */
  addAdapterBytes(id: string, adapterConfig: unknown, weights: Uint8Array): Promise<PlannerInfo>;
  removeAdapter(id: string): void;
  /** Decode steps run since the model loaded and the sequences they served (how well calls were batched). */
  decodeStats(): DecodeStats;
  /** n generations will overlap from now on (a group's live rollouts): the batcher holds calls for them. */
  expectConcurrentCalls(n: number): void;
  setActiveAdapter(id: string | null): void;
  score(sequences: number[][]): Promise<number[][]>;
  logitsLast(tokens: number[]): Promise<Float32Array>;
  /** How many tokens `messages` take as the prompt chat() would feed the model (template applied). */
  promptTokens(messages: ChatMessage[]): number;
  /** Chat through the tokenizer's template; text pieces stream on `line` as `{token: [piece]}`. */
  chat(messages: ChatMessage[], opts?: RemoteGenerateOptions, line?: GenerationLine): Promise<GenerationResult>;
  /**
   * Generation from token ids; each sampled id and its logprob stream on `line` as `{token: [id, logprob]}`.
   * Merged with the chat() and generateIds() calls it overlaps, as chat() is.
   */
  generateIds(promptIds: number[], opts?: RemoteTokenOptions, line?: GenerationLine): Promise<TokenGeneration>;
  /**
   * The optimizer next to the loaded model (the worker's TrainingHost), called directly: the page's
   * `training.trainStep(samples)` is applied by Comlink to this object in the worker, with no forwarding
   * layer. trainStart puts the trained adapter on the loaded model and makes it active, so the planner's next
   * generations sample from the policy being trained; checkpoints go to IndexedDB.
   */
  readonly training: PlannerTraining & ProxyMarked;
  unload(): void;
}
