// Loads the two real engines: the planner (our WebGPU runtime, in its worker) from a URL or a Hugging
// Face repo id, with an optional stored LoRA adapter made active; and the shared web-llm engine. Heavy
// modules are imported on demand so a page that only uses injected engines never downloads them.
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
  plannerModel: string;
  /** web-llm model id; empty or unset runs every module on the planner (one download, one model). */
  sharedModel?: string;
  adapterId?: string | null;
  onProgress?: (which: 'planner' | 'shared', p: LoadProgress) => void;
  dbName?: string;
}

export interface LoadedEngines extends AgentEngines {
  dispose(): void;
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
    const url = plannerModelUrl(o.plannerModel);
    const info = await client.load({ kind: 'url', url }, { name: modelNameOf(url) }, (p) => o.onProgress?.('planner', p));
    if (o.adapterId) await activateStoredAdapter(client, o.adapterId, o.dbName);
    const planner = new RemotePlannerEngine(client, info.id);
    if (o.sharedModel?.trim()) {
      const { createWebLlmEngine } = await import('../engine/webllm/webllm-engine');
      shared = await createWebLlmEngine({ modelId: o.sharedModel.trim(), onProgress: (p) => o.onProgress?.('shared', p) });
    } else {
      shared = planner;
    }
    return {
      planner,
      shared,
      dispose() {
        client.terminate();
        if (shared !== planner) void shared.dispose?.();
      },
    };
  } catch (e) {
    client.terminate();
    throw e;
  }
}
