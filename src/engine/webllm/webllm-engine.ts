// The shared web-llm engine (executor, verifier, generator) behind the app's ChatEngine interface. The
// MLC engine runs in workers/webllm.worker.ts; this side picks the model build from the GPU's
// capabilities, maps load progress, streams tokens, interrupts on abort, serialises requests (one engine,
// one generation at a time) and turns web-llm's failures into a typed WebLlmEngineError.
import { AgentFlowError, type ErrorCategory } from '../../errors';
import { watchWorker, type WorkerWatch } from '../../util/worker-watch';
import { CreateWebWorkerMLCEngine, prebuiltAppConfig, type AppConfig, type ChatCompletionChunk, type ChatCompletionRequestStreaming, type InitProgressReport, type ModelRecord, type WebWorkerMLCEngine } from '@mlc-ai/web-llm';
import type { ChatEngine, ChatMessage, FinishReason, GenerateOptions, GenerationResult, LoadProgress } from '../chat-engine';
import { chatStream, type ChatStream } from '../chat-stream';
import { DEFAULT_WEBLLM_MODEL, selectWebLlmModel, type ModelChoice } from './model-select';
import { toLoadProgress } from './progress';

export type WebLlmErrorCode = 'model-download' | 'model-selection' | 'webgpu-unavailable' | 'worker' | 'load' | 'generate';

export class WebLlmEngineError extends AgentFlowError {
  override readonly category: ErrorCategory = 'web-llm';
  constructor(
    readonly code: WebLlmErrorCode,
    message: string,
    readonly modelId: string,
    /** The model's base URL (for 'model-download'). */
    readonly url?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WebLlmEngineError';
  }
}

export interface WebLlmEngineOptions {
  /** Model id from web-llm's list (default Qwen2.5-1.5B-Instruct-q4f16_1-MLC; its q4f32 build without shader-f16). */
  modelId?: string;
  /** Whether the GPU has shader-f16. Default: asked of src/gpu/device.ts (getGpu().caps.f16). */
  f16?: boolean;
  /** The model list (default web-llm's prebuiltAppConfig). */
  appConfig?: AppConfig;
  /**
   * Serve the model's weights from here instead (a mirror or self-hosting): the record's `model` becomes
   * `${modelBaseUrl}${modelId}`. Must end in '/'.
   */
  modelBaseUrl?: string;
  /** Serve the compiled model library (.wasm) from here instead: `${modelLibBaseUrl}${file name}`. Must end in '/'. */
  modelLibBaseUrl?: string;
  onProgress?: (p: LoadProgress) => void;
  /** Aborting ends the load: the worker is terminated and the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** web-llm's raw report (its text is human-readable), for a status line. */
  onReport?: (r: InitProgressReport) => void;
  createWorker?: () => Worker;
}

function defaultWorker(): Worker {
  return new Worker(new URL('../../../workers/webllm.worker.ts', import.meta.url), { type: 'module', name: 'webllm' });
}

/** Copies `appConfig`, pointing the chosen model's record at the given mirrors. */
export function withModelUrls(appConfig: AppConfig, modelId: string, modelBaseUrl?: string, modelLibBaseUrl?: string): AppConfig {
  for (const [name, v] of [['modelBaseUrl', modelBaseUrl], ['modelLibBaseUrl', modelLibBaseUrl]] as const) {
    if (v !== undefined && !v.endsWith('/')) throw new WebLlmEngineError('model-selection', `web-llm: ${name} must end with '/', got ${v}`, modelId);
  }
  return {
    ...appConfig,
    model_list: appConfig.model_list.map((r): ModelRecord => {
      if (r.model_id !== modelId) return r;
      const libFile = r.model_lib.split('/').pop() ?? r.model_lib;
      return {
        ...r,
        model: modelBaseUrl !== undefined ? `${modelBaseUrl}${modelId}` : r.model,
        model_lib: modelLibBaseUrl !== undefined ? `${modelLibBaseUrl}${libFile}` : r.model_lib,
      };
    }),
  };
}

// How a failed fetch reads in Chromium, Firefox and Safari, and in web-llm's own caches.
const DOWNLOAD_FAILURE = /failed to fetch|networkerror|request failed|load failed|cannot fetch|failed to store|network response was not ok|err_(name|internet|connection)|\bstatus(?: code)?:? \d{3}\b/i;

/** Names what went wrong while loading `record`, as a typed error. */
export function classifyLoadError(e: unknown, record: ModelRecord): WebLlmEngineError {
  const cause = e instanceof Error ? `${e.name === 'Error' ? '' : `${e.name}: `}${e.message}` : String(e);
  const id = record.model_id;
  if (e instanceof WebLlmEngineError) return e;
  if (/WebGPU/i.test(cause) && /not (available|supported|found)|no adapter|unavailable/i.test(cause)) {
    return new WebLlmEngineError('webgpu-unavailable', `web-llm could not load '${id}': WebGPU is not available in this browser (${cause})`, id, undefined, { cause: e });
  }
  if (DOWNLOAD_FAILURE.test(cause)) {
    const offline = (globalThis as { navigator?: { onLine?: boolean } }).navigator?.onLine === false;
    return new WebLlmEngineError(
      'model-download',
      `${offline ? 'You appear to be offline: the model' : 'The model'} '${id}' could not be downloaded from ${record.model} (library ${record.model_lib}): ${cause}. ` +
        'Check the internet connection, or set a model URL this browser can reach. Models already downloaded load offline.',
      id,
      record.model,
      { cause: e },
    );
  }
  return new WebLlmEngineError('load', `web-llm could not load '${id}': ${cause}`, id, undefined, { cause: e });
}

/**
 * Creates the shared web-llm engine and loads the model. Rejects with a WebLlmEngineError (never hangs on
 * a worker that failed to start).
 */
export async function createWebLlmEngine(options: WebLlmEngineOptions = {}): Promise<WebLlmChatEngine> {
  const requested = options.modelId ?? DEFAULT_WEBLLM_MODEL;
  let f16 = options.f16;
  if (f16 === undefined) {
    try {
      const { getGpu } = await import('../../gpu/device');
      f16 = (await getGpu()).caps.f16;
    } catch (e) {
      throw new WebLlmEngineError('webgpu-unavailable', `web-llm needs WebGPU: ${e instanceof Error ? e.message : String(e)}`, requested, undefined, { cause: e });
    }
  }
  let choice: ModelChoice;
  try {
    choice = selectWebLlmModel({ f16 }, options.appConfig ?? prebuiltAppConfig, requested);
  } catch (e) {
    throw new WebLlmEngineError('model-selection', e instanceof Error ? e.message : String(e), requested, undefined, { cause: e });
  }
  const appConfig = withModelUrls(options.appConfig ?? prebuiltAppConfig, choice.modelId, options.modelBaseUrl, options.modelLibBaseUrl);
  const record = appConfig.model_list.find((r) => r.model_id === choice.modelId) as ModelRecord;

  const worker = (options.createWorker ?? defaultWorker)();
  // Watched for the engine's whole life: a worker that dies mid-load or mid-answer fails the call at once.
  const watch = watchWorker(worker, 'web-llm');
  const workerFailed = watch.gone.catch((e: Error) => {
    throw new WebLlmEngineError('worker', `web-llm worker failed: ${e.message}`, choice.modelId, undefined, { cause: e });
  });
  const initProgressCallback = (r: InitProgressReport) => {
    options.onReport?.(r);
    options.onProgress?.(toLoadProgress(r, choice.modelId));
  };
  const signal = options.signal;
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = () => reject(signal!.reason ?? new DOMException('Aborted', 'AbortError'));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const mlc = await Promise.race([CreateWebWorkerMLCEngine(worker, choice.modelId, { appConfig, initProgressCallback }), workerFailed, aborted]);
    return new WebLlmChatEngine(mlc, watch, choice, record.overrides?.context_window_size);
  } catch (e) {
    watch.terminate('the load failed');
    if (signal?.aborted) throw e;
    throw classifyLoadError(e, record);
  }
}

/**
 * Maps GenerateOptions onto web-llm's OpenAI-style request. web-llm has no top-k; topK is ignored. A jsonSchema
 * goes as web-llm 0.2.86 takes one: `response_format: {type: 'json_object', schema}` with the schema as JSON
 * text (its XGrammar compiles it and masks every token). OpenAI's `{type: 'json_schema'}` is not a type web-llm
 * knows: it would decode unconstrained without a word.
 */
export function toRequest(messages: ChatMessage[], options: GenerateOptions): ChatCompletionRequestStreaming {
  const req: ChatCompletionRequestStreaming = {
    messages: messages.map((m) => ({ role: m.role, content: m.content })) as ChatCompletionRequestStreaming['messages'],
    stream: true,
  };
  if (options.maxNewTokens !== undefined) req.max_tokens = options.maxNewTokens;
  if (options.temperature !== undefined) req.temperature = options.temperature;
  if (options.topP !== undefined) req.top_p = options.topP;
  if (options.seed !== undefined) req.seed = options.seed;
  if (options.stop?.length) req.stop = options.stop;
  if (options.jsonSchema !== undefined) req.response_format = { type: 'json_object', schema: checkedSchema(options.jsonSchema) };
  else if (options.json) req.response_format = { type: 'json_object' };
  return req;
}

/** The schema text, once it is seen to be a JSON object: web-llm's worker would fail on anything else with less to say. */
function checkedSchema(text: string): string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`GenerateOptions.jsonSchema is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error(`GenerateOptions.jsonSchema must be a JSON Schema object, got ${Array.isArray(v) ? 'an array' : String(v)}`);
  return text;
}

export class WebLlmChatEngine implements ChatEngine {
  readonly id: string;
  readonly modelId: string;
  /** Why a different build than requested was loaded, if it was. */
  readonly fallbackReason?: string;
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;

  constructor(
    private readonly mlc: WebWorkerMLCEngine,
    private readonly watch: WorkerWatch,
    choice: ModelChoice,
    /** The record's context_window_size override (prompt and reply together), when it has one. */
    readonly contextTokens?: number,
  ) {
    this.modelId = choice.modelId;
    this.fallbackReason = choice.fallbackReason;
    this.id = `web-llm:${choice.modelId}`;
  }

  get gone(): Error | null {
    return this.disposed ? null : this.watch.goneReason;
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream((emit) => {
      // A worker that dies mid-answer leaves web-llm's stream waiting forever: the call fails with its
      // WorkerGoneError instead (so does every later one).
      const run = this.queue.then(() => (this.disposed ? this.generate(messages, options, emit) : this.watch.race(this.generate(messages, options, emit))));
      this.queue = run.catch(() => undefined);
      return run;
    });
  }

  /** Stops the generation in progress (it ends with finishReason 'abort'). */
  interrupt(): void {
    this.mlc.interruptGenerate();
  }

  /** Unloads the model and ends the worker. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    try {
      await this.watch.race(this.mlc.unload());
    } finally {
      this.watch.terminate('unloaded');
    }
  }

  private async generate(messages: ChatMessage[], options: GenerateOptions, emit: (piece: string) => void): Promise<GenerationResult> {
    if (this.disposed) throw new WebLlmEngineError('generate', `web-llm engine for '${this.modelId}' was disposed`, this.modelId);
    const empty = (finishReason: FinishReason): GenerationResult => ({ text: '', promptTokens: [], tokens: [], logprobs: [], adapterId: null, finishReason, timings: { prefillMs: 0, decodeMs: 0 } });
    if (options.signal?.aborted) return empty('abort');
    const onAbort = () => this.mlc.interruptGenerate();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const t0 = performance.now();
    let tFirst: number | undefined;
    let text = '';
    let finish: string | null = null;
    try {
      const stream = (await this.mlc.chatCompletion(toRequest(messages, options))) as AsyncIterable<ChatCompletionChunk>;
      for await (const chunk of stream) {
        const choice = chunk.choices[0];
        const piece = choice?.delta?.content ?? '';
        if (piece) {
          tFirst ??= performance.now();
          text += piece;
          emit(piece);
        }
        if (choice?.finish_reason) finish = choice.finish_reason;
      }
    } catch (e) {
      throw new WebLlmEngineError('generate', `web-llm generation with '${this.modelId}' failed: ${e instanceof Error ? e.message : String(e)}`, this.modelId, undefined, { cause: e });
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    const t1 = performance.now();
    const finishReason: FinishReason = options.signal?.aborted || finish === 'abort' ? 'abort' : finish === 'length' ? 'length' : 'stop';
    return {
      text,
      promptTokens: [],
      tokens: [],
      logprobs: [],
      adapterId: null,
      finishReason,
      timings: { prefillMs: (tFirst ?? t1) - t0, decodeMs: t1 - (tFirst ?? t1) },
    };
  }
}
