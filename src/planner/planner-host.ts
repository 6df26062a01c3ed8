// The planner worker's side of its protocol (planner-protocol.ts): one loaded model (its runtime, chat
// engine and batcher), the generations running on it and the training session next to it. The worker
// file only exposes an instance with Comlink; the page talks to it through planner-client.ts.
import * as Comlink from 'comlink';
import { getGpu } from '../gpu/device';
import { idbTrainStorage } from '../trainer/checkpoint-idb';
import { runtimePolicyHost } from '../trainer/runtime-policy-host';
import { TrainingHost } from '../trainer/training-host';
import { GenerateBatcher } from '../engine/generate-batcher';
import { loadAdapter } from '../engine/load-checkpoint';
import { adapterBaseWarning, parseAdapter, type LoraAdapterConfig } from '../io/peft';
import { pickedFilesSource, type FileSource } from '../io/sources';
import { modelUrlSource } from '../io/webllm-cache';
import { memorySource } from '../engine/memory-source';
import { PlannerEngine } from '../engine/planner-engine';
import type { DecodeStats, GenerationLine, GenerationLineMessage, LoadOptions, ModelSpec, PlannerInfo, PlannerWorkerApi, RemoteGenerateOptions, RemoteTokenOptions } from './planner-protocol';
import type { Qwen2Runtime, TokenGeneration } from '../engine/runtime';
import type { ChatMessage, GenerationResult, LoadProgress } from '../engine/chat-engine';

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

export class PlannerHost implements PlannerWorkerApi {
  private runtime: Qwen2Runtime | null = null;
  private engine: PlannerEngine | null = null;
  // One per runtime, shared by chat() and generateIds(): generations that overlap (the rollouts of a GRPO
  // group) are decoded together whichever of the two they came through.
  private batcher: GenerateBatcher | null = null;
  private name = 'qwen2';
  /** PlannerInfo.notes: the loaded model's, then each added adapter's. */
  private notes: string[] = [];
  /** Why the loaded model has no chat engine (see PlannerInfo.noChat). */
  private noChat: string | null = null;
  /** The optimizer on the loaded model, exposed as it is (PlannerWorkerApi.training). */
  readonly training = Comlink.proxy(new TrainingHost(() => runtimePolicyHost(this.need(), this.name), idbTrainStorage));

  private need(): Qwen2Runtime {
    if (!this.runtime) throw new Error('no model is loaded in the planner worker; call load() first');
    return this.runtime;
  }

  private needBatcher(): GenerateBatcher {
    const rt = this.need();
    if (this.batcher?.runtime !== rt) this.batcher = new GenerateBatcher(rt);
    return this.batcher;
  }

  private needChat(what: string): PlannerEngine {
    if (!this.engine) throw new Error(`this model has no tokenizer.json / chat_template: ${what}`);
    return this.engine;
  }

  /** Frees the model and, since a trained adapter's buffers live on its runtime, the training session. */
  private drop(): void {
    this.training.trainStop();
    this.runtime?.destroy();
    this.runtime = this.engine = this.batcher = null;
  }

  async load(spec: ModelSpec, opts: LoadOptions = {}, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    const { name, maxContext, maxBatchRows, batchContext } = opts;
    // The old model goes once the new checkpoint is read, before the new runtime is built.
    const m = await PlannerEngine.loadModel(() => getGpu(), sourceOf(spec), { name, maxContext, maxBatchRows, batchContext, onProgress, beforeRuntime: () => this.drop() });
    this.name = m.name;
    this.notes = [...m.notes];
    this.runtime = m.runtime;
    this.engine = m.engine;
    // Without a tokenizer or a chat template the model still scores and generates from ids; chat says why not.
    this.noChat = m.noChat;
    this.batcher = m.engine?.batcher ?? null;
    this.needBatcher();
    return this.info();
  }

  async info(): Promise<PlannerInfo> {
    const rt = this.need();
    return {
      id: this.engine?.id ?? `planner:${this.name}`,
      config: rt.config,
      hasTokenizer: !!this.engine,
      chatTemplateSource: this.engine?.chatTemplateSource ?? null,
      noChat: this.engine ? null : this.noChat,
      adapters: rt.adapters.ids(),
      activeAdapter: rt.activeAdapterId,
      memory: rt.memory(),
      f16: rt.ctx.caps.f16,
      maxContext: rt.maxContext,
      notes: [...this.notes],
    };
  }

  async loadAdapter(id: string, spec: ModelSpec, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    const rt = this.need();
    const lora = await loadAdapter(sourceOf(spec), rt.config, { onProgress });
    await rt.addAdapter(id, lora);
    this.noteAdapter(id, lora.config);
    return this.info();
  }

  async addAdapterBytes(id: string, adapterConfig: unknown, weights: Uint8Array): Promise<PlannerInfo> {
    const rt = this.need();
    const lora = parseAdapter(adapterConfig, weights, { base: rt.config });
    await rt.addAdapter(id, lora);
    this.noteAdapter(id, lora.config);
    return this.info();
  }

  /** An adapter made for another base model loads (its shapes fit), with a warning in info().notes. */
  private noteAdapter(id: string, config: LoraAdapterConfig): void {
    const w = adapterBaseWarning(config, this.name, `'${id}'`);
    if (w && !this.notes.includes(w)) this.notes.push(w);
  }

  removeAdapter(id: string): void {
    this.need().adapters.remove(id);
  }

  decodeStats(): DecodeStats {
    const rt = this.need();
    return { ...rt.decodeCounters, maxRows: rt.maxDecodeRows };
  }

  expectConcurrentCalls(n: number): void {
    this.needBatcher().expect(n);
  }

  setActiveAdapter(id: string | null): void {
    this.need().setActiveAdapter(id);
  }

  score(sequences: number[][]): Promise<number[][]> {
    return this.need().score(sequences);
  }

  logitsLast(tokens: number[]): Promise<Float32Array> {
    return this.need().logitsLast(tokens);
  }

  promptTokens(messages: ChatMessage[]): number {
    return this.needChat('it cannot count chat tokens').promptIds(messages).length;
  }

  chat(messages: ChatMessage[], opts: RemoteGenerateOptions = {}, line?: GenerationLine): Promise<GenerationResult> {
    // generate() rather than stream(): the line's post takes each piece as it is decoded, with no queue
    // between them (the page's stream is the one queue a piece waits in).
    return overLine(line, (signal, onToken) => {
      const engine = this.needChat('use generateIds with token ids');
      return engine.generate(engine.promptIds(messages), { ...opts, signal }, onToken);
    });
  }

  generateIds(promptIds: number[], opts: RemoteTokenOptions = {}, line?: GenerationLine): Promise<TokenGeneration> {
    return overLine(line, (signal, onToken) => this.needBatcher().submit(promptIds, { ...opts, signal, onToken }));
  }

  unload(): void {
    this.drop();
  }
}

/**
 * Runs a generation under its line (see GenerationLine): the page's cancel becomes the one AbortSignal the
 * engine sees, and the engine's onToken is the line's post itself. `end` goes last on the line whatever
 * happens, so the page hands every token to its caller before the result (the result comes on another port,
 * and messages on two ports keep no order between them).
 */
async function overLine<T>(line: GenerationLine | undefined, run: (signal?: AbortSignal, onToken?: (...token: unknown[]) => void) => Promise<T>): Promise<T> {
  if (!line) return run();
  const { port } = line;
  const ac = new AbortController();
  if (line.aborted) ac.abort();
  port.onmessage = () => ac.abort();
  const post = (m: GenerationLineMessage) => port.postMessage(m);
  try {
    return await run(ac.signal, line.tokens ? (...token) => post({ token }) : undefined);
  } finally {
    post({ end: true });
    port.close();
  }
}
