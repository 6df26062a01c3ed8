// The planner engine in a module worker, so prefill and decode never block the page. The page talks to
// it with comlink (src/engine/planner-client.ts); token streaming and progress come back through
// Comlink.proxy callbacks, aborts through abort(generationId).
import * as Comlink from 'comlink';
import { getGpu } from '../src/gpu/device';
import { loadAdapter, loadCheckpoint } from '../src/engine/io/checkpoint';
import { parseAdapter } from '../src/engine/io/peft';
import { pickedFilesSource, type FileSource } from '../src/engine/io/sources';
import { modelUrlSource } from '../src/engine/io/webllm-cache';
import type { Qwen2Config } from '../src/engine/io/config';
import { GenerateBatcher } from '../src/engine/generate-batcher';
import { memorySource } from '../src/engine/memory-source';
import { PlannerEngine, plannerTokenizer } from '../src/engine/planner-engine';
import type { ChatTemplateSource } from '../src/engine/io/checkpoint';
import { defaultMaxContext, Qwen2Runtime, type GenerateTokensOptions, type GpuMemoryReport, type TokenGeneration } from '../src/engine/runtime';
import type { ChatMessage, GenerateOptions, GenerationResult, LoadProgress } from '../src/engine/types';
import type { StepStats } from '../src/trainer/grpo-step';
import type { TurnSample } from '../src/trainer/samples';
import { idbTrainStorage } from '../src/trainer/checkpoint-idb';
import { runtimePolicyHost } from '../src/trainer/runtime-policy-host';
import { TrainingHost, type SavedCheckpoint, type TrainSessionInfo, type TrainStartOptions } from '../src/trainer/training-host';

export type { TrainAdapterSpec, TrainStartOptions } from '../src/trainer/training-host';

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

/** Generation options that cross the worker boundary (no AbortSignal, no functions). */
export type RemoteGenerateOptions = Omit<GenerateOptions, 'signal' | 'onToken'>;
export type RemoteTokenOptions = Omit<GenerateTokensOptions, 'signal' | 'onToken' | 'onLogits'>;

function sourceOf(spec: ModelSpec): FileSource {
  switch (spec.kind) {
    case 'url':
      // A hub URL shares web-llm's cache (Cache Storage or IndexedDB): an MLC build web-llm downloaded loads
      // with no request, and what the planner downloads, web-llm finds (one download for both engines). A
      // plain folder URL is read as it is.
      return modelUrlSource(spec.url, { ...(spec.webllmCache ? { webllmCache: spec.webllmCache } : {}), cacheOnly: spec.cacheOnly });
    case 'files':
      return pickedFilesSource(spec.files);
    case 'bytes':
      return memorySource(spec.files, spec.label);
  }
}

let runtime: Qwen2Runtime | null = null;
let engine: PlannerEngine | null = null;
// One per runtime, shared by chat() and generateIds(): generations that overlap (the rollouts of a GRPO
// group) are decoded together whichever of the two they came through.
let batcher: GenerateBatcher | null = null;
let name = 'qwen2';
/** Why the loaded model has no chat engine (see PlannerInfo.noChat). */
let noChat: string | null = null;
const aborts = new Map<number, AbortController>();
// abort() can arrive before the generation it names has started (the page aborted at once).
const earlyAborts = new Set<number>();

function need(): Qwen2Runtime {
  if (!runtime) throw new Error('no model is loaded in the planner worker; call load() first');
  return runtime;
}

function needBatcher(): GenerateBatcher {
  const rt = need();
  if (batcher?.runtime !== rt) batcher = new GenerateBatcher(rt);
  return batcher;
}

const training = new TrainingHost(() => runtimePolicyHost(need(), name), idbTrainStorage);
// A new model (or none) invalidates the trained adapter's GPU buffers.
const dropTraining = () => training.trainStop();

async function info(): Promise<PlannerInfo> {
  const rt = need();
  return {
    id: engine?.id ?? `planner:${name}`,
    config: rt.config,
    hasTokenizer: !!engine,
    chatTemplateSource: engine?.chatTemplateSource ?? null,
    noChat: engine ? null : noChat,
    adapters: rt.adapters.ids(),
    activeAdapter: rt.activeAdapterId,
    memory: rt.memory(),
    f16: rt.ctx.caps.f16,
    maxContext: rt.maxContext,
  };
}

function withAbort<T>(generationId: number | undefined, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  if (generationId !== undefined) {
    aborts.set(generationId, ac);
    if (earlyAborts.delete(generationId)) ac.abort();
  }
  return run(ac.signal).finally(() => {
    if (generationId !== undefined) aborts.delete(generationId);
  });
}

const api = {
  /** Loads config, weights and (when present) the tokenizer; replaces any model loaded before. */
  async load(spec: ModelSpec, opts: LoadOptions = {}, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    const source = sourceOf(spec);
    const ckpt = await loadCheckpoint(source, { onProgress });
    const ctx = await getGpu();
    if (runtime) dropTraining();
    runtime?.destroy();
    runtime = engine = batcher = null;
    const maxContext = opts.maxContext ?? defaultMaxContext(ckpt.config);
    const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext, maxBatchRows: opts.maxBatchRows, batchContext: opts.batchContext ?? 2 * maxContext });
    ckpt.release();
    name = opts.name ?? source.label.replace(/\/+$/, '').split('/').pop() ?? 'qwen2';
    runtime = rt;
    const b = needBatcher();
    noChat = null;
    // Without a tokenizer or a chat template the model still scores and generates from ids; chat says why not.
    try {
      const t = plannerTokenizer(ckpt, source.label);
      engine = new PlannerEngine(rt, t.tokenizer, name, t.extraEos, b, t.chatTemplateSource);
    } catch (e) {
      noChat = e instanceof Error ? e.message : String(e);
    }
    return info();
  },

  info,

  /** Loads a PEFT adapter folder under `id` (validated against the base model); does not activate it. */
  async loadAdapter(id: string, spec: ModelSpec, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    const rt = need();
    await rt.addAdapter(id, await loadAdapter(sourceOf(spec), rt.config, { onProgress }));
    return info();
  },

  /** An adapter from its two PEFT files' contents (e.g. a checkpoint kept in IndexedDB). */
  async addAdapterBytes(id: string, adapterConfig: unknown, weights: Uint8Array): Promise<PlannerInfo> {
    const rt = need();
    await rt.addAdapter(id, parseAdapter(adapterConfig, weights, { base: rt.config }));
    return info();
  },

  removeAdapter(id: string): void {
    need().adapters.remove(id);
  },

  /** Decode steps run since the model loaded and the sequences they served (how well calls were batched). */
  decodeStats(): DecodeStats {
    const rt = need();
    return { ...rt.decodeCounters, maxRows: rt.maxDecodeRows };
  },

  /** n generations will overlap from now on (a group's live rollouts): the batcher holds calls for them. */
  expectConcurrentCalls(n: number): void {
    needBatcher().expect(n);
  },

  setActiveAdapter(id: string | null): void {
    need().setActiveAdapter(id);
  },

  score(sequences: number[][]): Promise<number[][]> {
    return need().score(sequences);
  },

  logitsLast(tokens: number[]): Promise<Float32Array> {
    return need().logitsLast(tokens);
  },

  /** How many tokens `messages` take as the prompt chat() would feed the model (template applied). */
  promptTokens(messages: ChatMessage[]): number {
    if (!engine) throw new Error('this model has no tokenizer.json / chat_template: it cannot count chat tokens');
    return engine.promptIds(messages).length;
  },

  /** Chat through the tokenizer's template; text pieces stream to `onToken`. */
  chat(messages: ChatMessage[], opts: RemoteGenerateOptions = {}, onToken?: (piece: string) => void, generationId?: number): Promise<GenerationResult> {
    if (!engine) throw new Error('this model has no tokenizer.json / chat_template: use generateIds with token ids');
    const e = engine;
    return withAbort(generationId, (signal) => e.chat(messages, { ...opts, signal, onToken: onToken ? (p) => void onToken(p) : undefined }));
  },

  /**
   * Generation from token ids; each sampled id and its logprob stream to `onToken`. Merged with the chat()
   * and generateIds() calls it overlaps, as chat() is.
   */
  generateIds(
    promptIds: number[],
    opts: RemoteTokenOptions = {},
    onToken?: (id: number, logprob: number) => void,
    generationId?: number,
  ): Promise<TokenGeneration> {
    const b = needBatcher();
    return withAbort(generationId, (signal) => b.submit(promptIds, { ...opts, signal, onToken: onToken ? (id, lp) => void onToken(id, lp) : undefined }));
  },

  /** Stops generation `generationId` after its current token. */
  abort(generationId: number): void {
    const ac = aborts.get(generationId);
    if (ac) ac.abort();
    else earlyAborts.add(generationId);
  },

  /**
   * Starts Flow-GRPO training of a LoRA adapter on the loaded model; the adapter becomes active, so the
   * planner's next generations sample from the policy being trained. Replaces any session before.
   */
  trainStart(o: TrainStartOptions): Promise<TrainSessionInfo> {
    return training.trainStart(o);
  },

  /** One optimizer step on the planner turns of this step's rollout groups. */
  trainStep(samples: TurnSample[]): Promise<StepStats> {
    return training.trainStep(samples);
  },

  /**
   * Saves adapter, AdamW moments, counters and RNG to IndexedDB (once per step), then prunes the run's older
   * checkpoints to `keep` besides `protect`; returns the step and the stored adapter's id.
   */
  trainCheckpoint(o?: { keep?: number; protect?: number[] }): Promise<SavedCheckpoint> {
    return training.trainCheckpoint(o);
  },

  trainInfo(): TrainSessionInfo | null {
    return training.trainInfo();
  },

  /** The trained adapter as PEFT files. */
  exportAdapter(): Promise<{ config: Record<string, unknown>; weights: Uint8Array }> {
    return training.exportAdapter();
  },

  /** Ends the session: frees its buffers and removes its adapter (stored checkpoints stay). */
  trainStop(): void {
    dropTraining();
  },

  unload(): void {
    dropTraining();
    runtime?.destroy();
    runtime = engine = batcher = null;
  },
};

export type PlannerWorkerApi = typeof api;
Comlink.expose(api);
