// LoRA adapters stored in IndexedDB ('adapters'): list, delete, keep by name, export as PEFT files and import PEFT
// files (validated by the engine's PEFT parser, so a wrong file is refused with its name and tensor).
import type { Qwen2Config } from '../../io/qwen2-config';
import { LORA_MODULES, MODULE_PATH, moduleShape, parseAdapter, type LoraAdapter, type LoraModule } from '../../io/peft';
import { writeSafetensors } from '../../io/safetensors';
import { describeStorageError, openAgentDb } from '../../store/db';
import type { AdapterRecord } from '../../store/records';
import { adapterTensors } from '../../trainer/lora-init';

export async function listAdapters(dbName?: string): Promise<AdapterRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('adapters', 'byCreated')).reverse();
}

export async function deleteAdapter(id: string, dbName?: string): Promise<void> {
  await (await openAgentDb(dbName)).delete('adapters', id);
}

/** Saves an adapter under a name of the user's own: pruning and freeing (store/training-storage.ts) never delete it. */
export async function keepAdapter(id: string, name: string, dbName?: string): Promise<void> {
  const n = name.trim();
  if (!n) throw new Error('an adapter needs a name to be kept');
  const db = await openAgentDb(dbName);
  const rec = await db.get('adapters', id);
  if (!rec) throw new Error(`adapter '${id}' is not in this browser's storage`);
  try {
    await db.put('adapters', { ...rec, name: n, keep: true });
  } catch (e) {
    throw describeStorageError(e, `adapter '${n}'`);
  }
}

/** PEFT files of a stored adapter: adapter_config.json text and adapter_model.safetensors bytes. */
export function adapterFiles(rec: AdapterRecord): { config: string; weights: Uint8Array } {
  return {
    config: JSON.stringify(rec.config, null, 2),
    weights: writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data }))),
  };
}

/** The files an import came from, so an error names what the user picked. */
export interface AdapterFileNames {
  config: string;
  weights: string;
}

/** Stores a PEFT adapter picked by the user; returns its record. Nothing is stored when the files are refused. */
export async function importAdapterFiles(
  name: string,
  configText: string,
  weights: Uint8Array,
  dbName?: string,
  files: AdapterFileNames = { config: 'adapter_config.json', weights: 'adapter_model.safetensors' },
): Promise<AdapterRecord> {
  let json: unknown;
  try {
    json = JSON.parse(configText);
  } catch (e) {
    throw new Error(`${files.config} is not valid JSON: ${(e as Error).message}`);
  }
  const adapter = parseAdapter(json, weights, { configFile: files.config, weightsFile: files.weights });
  const tensors: AdapterRecord['tensors'] = {};
  for (const t of adapterTensors(adapter)) tensors[t.name] = { shape: t.shape, data: Float32Array.from(t.data) };
  const rec: AdapterRecord = {
    id: `imported-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}-${name.replace(/[^\w.-]+/g, '_')}`,
    name,
    createdAt: Date.now(),
    baseModel: adapter.config.baseModelNameOrPath ?? '',
    config: json as Record<string, unknown>,
    tensors,
  };
  try {
    await (await openAgentDb(dbName)).put('adapters', rec);
  } catch (e) {
    throw describeStorageError(e, `adapter '${name}'`);
  }
  return rec;
}

/** The name an imported adapter gets when the user gives none: the weights file's name without the PEFT suffix. */
export function importedAdapterName(weightsFileName: string): string {
  const stem = weightsFileName.replace(/\.safetensors$/i, '').replace(/[._-]?adapter_model$/i, '');
  return stem || 'imported adapter';
}

/** Rank and target modules of a stored adapter, read from its tensors (what training from it will use). */
export function adapterShape(rec: AdapterRecord): { rank: number; targets: LoraModule[] } {
  const names = Object.keys(rec.tensors);
  const a = names.find((n) => n.endsWith('lora_A.weight'));
  return {
    rank: a ? rec.tensors[a].shape[0] : Number(rec.config.r),
    targets: LORA_MODULES.filter((m) => names.some((n) => n.includes(`.${MODULE_PATH[m]}.lora_`))),
  };
}

/** A stored adapter as a LoraAdapter, checked against `base` when given; errors name the adapter. */
export async function loadStoredAdapter(id: string, dbName?: string, base?: Qwen2Config): Promise<LoraAdapter> {
  const rec = await (await openAgentDb(dbName)).get('adapters', id);
  if (!rec) throw new Error(`adapter '${id}' is not in this browser's storage (was it deleted?)`);
  return parseAdapter(rec.config, adapterFiles(rec).weights, { base, configFile: `adapter “${rec.name}” config`, weightsFile: `adapter “${rec.name}” tensors` });
}

/**
 * Why a stored adapter cannot be applied to a planner with `base`'s shapes (its layer count or a LoRA
 * tensor's shape differs), or null when it fits, read from its tensors without building the adapter.
 */
export function adapterMisfit(rec: AdapterRecord, base: Qwen2Config): string | null {
  for (const [name, t] of Object.entries(rec.tensors)) {
    const m = /layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_([AB])\.weight$/.exec(name);
    const module = m ? LORA_MODULES.find((x) => MODULE_PATH[x] === `${m[2]}.${m[3]}`) : undefined;
    if (!m || !module) continue;
    const layer = Number(m[1]);
    if (layer >= base.numLayers) return `it has layer ${layer}; the loaded planner has ${base.numLayers} layers`;
    const want = moduleShape(base, module);
    const [rows, cols] = t.shape;
    if (m[4] === 'A' ? cols !== want.inFeatures : rows !== want.outFeatures) {
      return `its ${MODULE_PATH[module]} is ${m[4] === 'A' ? cols : rows} wide; the loaded planner’s is ${m[4] === 'A' ? want.inFeatures : want.outFeatures}`;
    }
  }
  return null;
}
