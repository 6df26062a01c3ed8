// LoRA adapters stored in IndexedDB ('adapters'): list, delete, export as PEFT files and import PEFT
// files (validated by the engine's PEFT parser, so a wrong file is refused with its name and tensor).
import { parseAdapter } from '../engine/io/peft';
import { writeSafetensors } from '../engine/io/safetensors';
import { describeStorageError, openAgentDb } from '../store/db';
import type { AdapterRecord } from '../store/records';
import { adapterTensors } from '../trainer/lora';

export async function listAdapters(dbName?: string): Promise<AdapterRecord[]> {
  return (await (await openAgentDb(dbName)).getAllFromIndex('adapters', 'byCreated')).reverse();
}

export async function deleteAdapter(id: string, dbName?: string): Promise<void> {
  await (await openAgentDb(dbName)).delete('adapters', id);
}

/** PEFT files of a stored adapter: adapter_config.json text and adapter_model.safetensors bytes. */
export function adapterFiles(rec: AdapterRecord): { config: string; weights: Uint8Array } {
  return {
    config: JSON.stringify(rec.config, null, 2),
    weights: writeSafetensors(Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data }))),
  };
}

/** Stores a PEFT adapter picked by the user; returns its record. */
export async function importAdapterFiles(name: string, configText: string, weights: Uint8Array, dbName?: string): Promise<AdapterRecord> {
  let json: unknown;
  try {
    json = JSON.parse(configText);
  } catch (e) {
    throw new Error(`adapter_config.json is not valid JSON: ${(e as Error).message}`);
  }
  const adapter = parseAdapter(json, weights);
  const tensors: AdapterRecord['tensors'] = {};
  for (const t of adapterTensors(adapter)) tensors[t.name] = { shape: t.shape, data: Float32Array.from(t.data) };
  const rec: AdapterRecord = {
    id: `imported-${Date.now().toString(36)}-${name.replace(/[^\w.-]+/g, '_')}`,
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
