// Loads the two real engines: the planner (our WebGPU runtime, in its worker) from a URL or a Hugging
// Face repo id, with an optional stored LoRA adapter made active; and the shared web-llm engine. Heavy
// modules are imported on demand so a page that only uses injected engines never downloads them.
import { baseModelView } from '../engine/base-model-view';
import type { AgentEngines } from '../agent/loop';
import type { ChatEngine, LoadProgress } from '../engine/types';
import { openAgentDb } from '../store/db';

/** 'Qwen/Qwen2.5-0.5B-Instruct' -> the hub's resolve URL; full URLs (absolute or relative) pass through. */
export function plannerModelUrl(modelOrUrl: string, base = globalThis.location?.href ?? 'http://localhost/'): string {
  const s = modelOrUrl.trim();
  if (!s) throw new Error('planner model: give a URL of a folder with config.json and model.safetensors, or a Hugging Face repo id');
  if (/^[\w.-]+\/[\w.-]+$/.test(s) && !s.startsWith('.')) return `https://huggingface.co/${s}/resolve/main/`;
  const url = new URL(s, base).href;
  return url.endsWith('/') ? url : `${url}/`;
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
}

export interface LoadedEngines extends AgentEngines {
  dispose(): void;
  /** What the user should know about how the models were loaded (a fallback build, a rebuilt chat template). */
  notes: string[];
}

/** The planner's load spec and what to tell the user about it. */
async function plannerSpec(o: LoadEnginesOptions): Promise<{ spec: { kind: 'url'; url: string; webllmCache?: 'cache' | 'indexeddb' | 'none' }; notes: string[] }> {
  if (!o.plannerFromShared) return { spec: { kind: 'url', url: plannerModelUrl(o.plannerModel) }, notes: [] };
  const shared = o.sharedModel?.trim();
  if (!shared) throw new Error('planner model: "use the shared model\'s download" needs a shared web-llm model');
  const [{ prebuiltAppConfig }, { plannerSourceForWebLlmModel }, { getGpu }] = await Promise.all([
    import('@mlc-ai/web-llm'),
    import('../engine/webllm/model-select'),
    import('../gpu/device'),
  ]);
  const s = plannerSourceForWebLlmModel({ f16: (await getGpu()).caps.f16 }, prebuiltAppConfig, shared);
  return { spec: { kind: 'url', url: s.url, webllmCache: s.webllmCache }, notes: s.fallbackReason ? [s.fallbackReason] : [] };
}

/** Makes the stored adapter `id` (IndexedDB 'adapters') active in the planner worker. */
export async function activateStoredAdapter(client: import('../engine/planner-client').PlannerClient, id: string | null, dbName?: string): Promise<void> {
  if (id === null) return client.setActiveAdapter(null);
  const info = await client.info();
  if (!info.adapters.includes(id)) {
    const rec = await (await openAgentDb(dbName)).get('adapters', id);
    if (!rec) throw new Error(`adapter '${id}' is not in this browser's storage (Training tab lists the stored adapters)`);
    const { writeSafetensors } = await import('../engine/io/safetensors');
    const bytes = writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })));
    await client.addAdapterBytes(id, rec.config, bytes);
  }
  await client.setActiveAdapter(id);
}

export async function loadEngines(o: LoadEnginesOptions): Promise<LoadedEngines> {
  const { PlannerClient, RemotePlannerEngine } = await import('../engine/planner-client');
  const client = new PlannerClient();
  let shared: ChatEngine & { dispose?: () => Promise<void> };
  try {
    const { spec, notes } = await plannerSpec(o);
    const info = await client.load(spec, { name: modelNameOf(plannerModelUrl(spec.url)) }, (p) => o.onProgress?.('planner', p));
    if (info.chatTemplateSource === 'mlc-chat-config.json conv_template') {
      notes.push("the planner's chat template is rebuilt from mlc-chat-config.json (tokenizer_config.json is not in web-llm's cache and could not be downloaded)");
    }
    if (o.adapterId) await activateStoredAdapter(client, o.adapterId, o.dbName);
    const planner = new RemotePlannerEngine(client, info.id);
    if (o.sharedModel?.trim()) {
      const { createWebLlmEngine } = await import('../engine/webllm/webllm-engine');
      shared = await createWebLlmEngine({ modelId: o.sharedModel.trim(), onProgress: (p) => o.onProgress?.('shared', p) });
    } else {
      // The frozen modules run on the planner's base weights: the adapter is the planner's alone.
      shared = baseModelView(planner);
    }
    return {
      planner,
      shared,
      notes,
      dispose() {
        client.terminate();
        void shared.dispose?.();
      },
    };
  } catch (e) {
    client.terminate();
    throw e;
  }
}
