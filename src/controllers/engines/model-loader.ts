// Loads the two real engines: the planner (our WebGPU runtime, in its worker) from a URL or a Hugging
// Face repo id, with an optional stored LoRA adapter made active; and the shared web-llm engine. Heavy
// modules are imported on demand so a page that only uses injected engines never downloads them.
import { AgentFlowError, type ErrorCategory } from '../../errors';
import { baseModelView } from '../../engine/base-model-view';
import type { AgentEngines } from '../../agent/loop';
import type { PlannerTrainer } from '../../planner/planner-client';
import type { ChatEngine, LoadProgress } from '../../engine/chat-engine';
import { untilAborted } from '../../util/abort';
import { openAgentDb } from '../../store/db';
import { crossOriginAdvice, hostsInWords, isUnreachable } from './load-failure';

const HUB_REPO = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** Whether the planner field is read as a Hugging Face repo id ('models/x' is one: a folder is './models/x'). */
export function isHubRepoId(modelOrUrl: string): boolean {
  const s = modelOrUrl.trim();
  return HUB_REPO.test(s) && !s.includes('..');
}

/**
 * 'Qwen/Qwen2.5-0.5B-Instruct' (or its page, https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct) -> the
 * hub's resolve URL; http(s) URLs and paths starting with '/', '../../ui' or '../..' (resolved against the page)
 * pass through. Anything else is refused before any request: a bare 'Qwen2.5-0.5B' would otherwise be
 * fetched from this app's own origin, where a host that answers every path with its index.html serves a
 * web page for config.json.
 */
export function plannerModelUrl(modelOrUrl: string, base = globalThis.location?.href ?? 'http://localhost/'): string {
  const s = modelOrUrl.trim();
  if (!s) throw new Error('planner model: give a URL of a folder with config.json and model.safetensors, or a Hugging Face repo id');
  if (isHubRepoId(s)) return `https://huggingface.co/${s}/resolve/main/`;
  let url: URL;
  if (/^https?:\/\//i.test(s)) {
    try {
      url = new URL(s);
    } catch {
      throw new Error(`planner model: '${s}' is not a valid URL`);
    }
    const page = url.hostname === 'huggingface.co' ? /^\/([^/]+\/[^/]+?)\/?(?:tree\/main\/?)?$/.exec(url.pathname) : null;
    if (page && HUB_REPO.test(page[1])) return `https://huggingface.co/${page[1]}/resolve/main/`;
  } else if (/^\.{0,2}\//.test(s)) {
    url = new URL(s, base);
  } else {
    throw new Error(
      `planner model: '${s}' is neither a Hugging Face repo id (organisation/name, e.g. Qwen/Qwen2.5-0.5B-Instruct) nor a URL (https://…, or a path starting with / or ./)`,
    );
  }
  return url.href.endsWith('/') ? url.href : `${url.href}/`;
}

/** A readable name for a model URL: the hub repo's name, else the folder's. */
export function modelNameOf(url: string): string {
  const path = new URL(url).pathname;
  const hub = /\/([^/]+)\/resolve\/[^/]+\/?$/.exec(path);
  return hub ? hub[1] : path.replace(/\/+$/, '').split('/').pop() || 'planner';
}

export interface LoadEnginesOptions {
  /** Ignored with plannerFromShared. */
  plannerModel: string;
  /**
   * The planner reads the shared model's web-llm build (4-bit, QLoRA-style training on top): both engines
   * use one download, which the planner makes first, into web-llm's caches. Needs sharedModel.
   */
  plannerFromShared?: boolean;
  /** web-llm model id; empty or unset runs every module on the planner (one download, one model). */
  sharedModel?: string;
  adapterId?: string | null;
  onProgress?: (which: 'planner' | 'shared', p: LoadProgress) => void;
  dbName?: string;
  /** Aborting ends the load: both workers are terminated and the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Load only from this browser's caches (reloading the last models when the page starts): a model not
   * wholly cached is a NotCachedError and nothing is downloaded.
   */
  cacheOnly?: boolean;
}

/** The models are not (all) in this browser's cache, and the load was told not to download (cacheOnly). */
export class ModelNotCachedError extends AgentFlowError {
  override readonly category: ErrorCategory = 'model-not-cached';
  constructor(what: string) {
    super(`${what} is not (all) in this browser's cache any more`);
    this.name = 'ModelNotCachedError';
  }
}

export interface LoadedEngines extends AgentEngines {
  /** The planner worker's optimizer and adapters: what the Training tab and train() drive. */
  trainer: PlannerTrainer;
  dispose(): void;
  /** What the user should know about how the models were loaded (a fallback build, a rebuilt chat template). */
  notes: string[];
}

/**
 * The planner loaded but the shared web-llm model did not (offline, its host unreachable, no GPU for it):
 * `plannerAlone` holds the loaded planner serving every module, for the user to go on with or discard
 * (dispose); nothing else of the load is kept.
 */
export class SharedModelUnavailableError extends AgentFlowError {
  override readonly category: ErrorCategory = 'source';
  constructor(
    readonly sharedModel: string,
    readonly plannerAlone: LoadedEngines,
    readonly reason: string,
    /** web-llm's own error, for a Details fold: the plain reason says what it means. */
    readonly detail: string,
  ) {
    super(`The planner loaded, but the shared model ${sharedModel} could not be loaded: ${reason}.`);
    this.name = 'SharedModelUnavailableError';
  }
}

/** Why web-llm could not load `record`, in words: which host could not be reached (the first whose files are not cached). */
async function sharedFailureReason(record: import('@mlc-ai/web-llm').ModelRecord, e: unknown): Promise<string> {
  const msg = e instanceof Error ? e.message : String(e);
  if (!isUnreachable(msg)) return msg;
  const offline = globalThis.navigator?.onLine === false;
  let hosts: string[] = [];
  try {
    const { webllmFiles } = await import('./model-files');
    const files = (await webllmFiles(record)).files.filter((f) => !f.cached);
    hosts = [...new Set((files.length ? files : [{ url: record.model }]).map((f) => new URL(f.url).host))].slice(0, 1);
  } catch {
    hosts = [new URL(record.model).host];
  }
  return `${hostsInWords(hosts)} could not be reached${offline ? ' (you appear to be offline)' : ''}, so its files could not be downloaded`;
}

/** The planner's load spec and what to tell the user about it. */
async function plannerSpec(o: LoadEnginesOptions): Promise<{ spec: { kind: 'url'; url: string; webllmCache?: 'cache' | 'indexeddb' | 'none'; cacheOnly?: boolean }; notes: string[] }> {
  if (!o.plannerFromShared) return { spec: { kind: 'url', url: plannerModelUrl(o.plannerModel), cacheOnly: o.cacheOnly }, notes: [] };
  const shared = o.sharedModel?.trim();
  if (!shared) throw new Error('planner model: "use the shared model\'s download" needs a shared web-llm model');
  const [{ prebuiltAppConfig }, { plannerSourceForWebLlmModel }, { getGpu }] = await Promise.all([
    import('@mlc-ai/web-llm'),
    import('../../engine/webllm/model-select'),
    import('../../gpu/device'),
  ]);
  const s = plannerSourceForWebLlmModel({ f16: (await getGpu()).caps.f16 }, prebuiltAppConfig, shared);
  return { spec: { kind: 'url', url: s.url, webllmCache: s.webllmCache, cacheOnly: o.cacheOnly }, notes: s.fallbackReason ? [s.fallbackReason] : [] };
}

/** Makes the stored adapter `id` (IndexedDB 'adapters') active in the planner worker. */
export async function activateStoredAdapter(client: PlannerTrainer, id: string | null, dbName?: string): Promise<void> {
  if (id === null) return client.setActiveAdapter(null);
  const info = await client.info();
  if (!info.adapters.includes(id)) {
    const rec = await (await openAgentDb(dbName)).get('adapters', id);
    if (!rec) throw new Error(`adapter '${id}' is not in this browser's storage (Training tab lists the stored adapters)`);
    const { writeSafetensors } = await import('../../io/safetensors');
    const bytes = writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })));
    await client.addAdapterBytes(id, rec.config, bytes);
  }
  await client.setActiveAdapter(id);
}

/** The web-llm record `modelId` resolves to on this GPU (its q4f32 sibling without shader-f16); throws naming a bad id. */
export async function sharedModelRecord(modelId: string): Promise<import('@mlc-ai/web-llm').ModelRecord> {
  const [{ prebuiltAppConfig }, { selectWebLlmModel }, { getGpu }] = await Promise.all([import('@mlc-ai/web-llm'), import('../../engine/webllm/model-select'), import('../../gpu/device')]);
  let choice: { modelId: string };
  try {
    choice = selectWebLlmModel({ f16: (await getGpu()).caps.f16 }, prebuiltAppConfig, modelId);
  } catch (e) {
    throw new Error(`shared model: ${(e as Error).message}`);
  }
  return prebuiltAppConfig.model_list.find((r) => r.model_id === choice.modelId)!;
}

export async function loadEngines(o: LoadEnginesOptions): Promise<LoadedEngines> {
  const sharedId = o.sharedModel?.trim();
  // Both ids are checked before anything downloads: a bad shared id must not cost the planner's download.
  const sharedRecord = sharedId ? await sharedModelRecord(sharedId) : null;
  const { spec, notes } = await plannerSpec(o);
  if (o.cacheOnly && sharedRecord) {
    const { webllmFiles } = await import('./model-files');
    if (!(await webllmFiles(sharedRecord)).complete) throw new ModelNotCachedError(`the shared model ${sharedRecord.model_id}`);
  }
  const { PlannerClient, RemotePlannerEngine } = await import('../../planner/planner-client');
  o.signal?.throwIfAborted();
  const client = new PlannerClient();
  let shared: (ChatEngine & { dispose?: () => Promise<void> }) | null = null;
  try {
    // A terminated worker never answers: the load is raced against the signal, then the worker ended.
    const info = await untilAborted(
      Promise.race([client.load(spec, { name: modelNameOf(plannerModelUrl(spec.url)) }, (p) => o.onProgress?.('planner', p)), client.failed]),
      o.signal,
    ).catch((e: Error) => {
      if (e?.name === 'NotCachedError') throw new ModelNotCachedError(`the planner ${modelNameOf(plannerModelUrl(spec.url))}`);
      // A folder on another origin that could not be read is usually a server without CORS headers.
      const advice = !o.signal?.aborted && isUnreachable(e?.message ?? '') ? crossOriginAdvice(spec.url, globalThis.location?.href ?? spec.url, globalThis.navigator?.onLine !== false) : null;
      if (advice) throw new Error(`${e.message.replace(/\.?$/, '.')} ${advice}`, { cause: e });
      throw e;
    });
    if (info.chatTemplateSource === 'mlc-chat-config.json conv_template') {
      notes.push("the planner's chat template is rebuilt from mlc-chat-config.json (tokenizer_config.json is not in web-llm's cache and could not be downloaded)");
    }
    if (o.adapterId) {
      try {
        await untilAborted(activateStoredAdapter(client, o.adapterId, o.dbName), o.signal);
      } catch (e) {
        // Reloading on start keeps the model when its adapter is gone or refused; a load the user asked for fails.
        if (!o.cacheOnly || o.signal?.aborted) throw e;
        notes.push(`the adapter ${o.adapterId} was not activated: ${(e as Error).message}`);
      }
    }
    // The worker's warnings about what it loaded (shards without md5sum; an adapter made for another model).
    notes.push(...(o.adapterId ? (await client.info()).notes : info.notes));
    const planner = new RemotePlannerEngine(client, info.id, info.maxContext);
    // Without a shared model the frozen modules run on the planner's base weights: the adapter is the planner's alone.
    const alone = (): LoadedEngines => ({ planner, shared: baseModelView(planner), trainer: client, notes, dispose: () => client.terminate() });
    if (sharedRecord) {
      const { createWebLlmEngine } = await import('../../engine/webllm/webllm-engine');
      try {
        shared = await createWebLlmEngine({ modelId: sharedId, signal: o.signal, onProgress: (p) => o.onProgress?.('shared', p) });
      } catch (e) {
        if (o.signal?.aborted) throw e;
        // The planner is loaded and serves every module: the user may go on with it (see SharedModelUnavailableError).
        throw new SharedModelUnavailableError(sharedRecord.model_id, alone(), await sharedFailureReason(sharedRecord, e), e instanceof Error ? e.message : String(e));
      }
    }
    if (!shared) return alone();
    const sharedEngine = shared;
    return {
      planner,
      shared: sharedEngine,
      trainer: client,
      notes,
      dispose() {
        client.terminate();
        void sharedEngine.dispose?.();
      },
    };
  } catch (e) {
    if (e instanceof SharedModelUnavailableError) throw e;
    client.terminate();
    void shared?.dispose?.();
    throw e;
  }
}
