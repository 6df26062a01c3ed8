// Importing PEFT files into the adapter store: a refused file is named in the error and stores nothing;
// an accepted one stores exactly the file's tensors.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { exportAdapter } from '../../io/peft';
import { readSafetensors } from '../../io/safetensors';
import { initLoraAdapter } from '../../trainer/lora-init';
import { ToyTask, toyModel } from '../../trainer/toy-task';
import { Rng } from '../../util/rng';
import { adapterMisfit, adapterShape, importAdapterFiles, importedAdapterName, listAdapters, loadStoredAdapter } from './adapter-store';

function toyFiles() {
  const adapter = initLoraAdapter(toyModel(new ToyTask(), { seed: 1 }).config, { r: 3, alpha: 6, modules: ['k', 'down'], baseModelNameOrPath: 'agentflow-toy' }, new Rng(9));
  // Non-zero B, so a mix-up of A and B would show.
  for (const p of adapter.pairs.values()) p.B.forEach((_, i) => (p.B[i] = Math.sin(i + p.layer)));
  const { config, weights } = exportAdapter(adapter);
  return { config: JSON.stringify(config), weights };
}

describe('adapter import', () => {
  it('stores the tensors of the files under the given name, with rank and targets read back', async () => {
    const db = `adapter-import-${Math.random()}`;
    const f = toyFiles();
    const rec = await importAdapterFiles('mine', f.config, f.weights, db, { config: 'my.json', weights: 'my.safetensors' });
    const st = readSafetensors(f.weights, 'w');
    expect(Object.keys(rec.tensors).sort()).toEqual(st.names().sort());
    for (const n of st.names()) expect(Array.from(rec.tensors[n].data)).toEqual(Array.from(st.f32(n)));
    expect(rec).toMatchObject({ name: 'mine', baseModel: 'agentflow-toy' });
    expect(adapterShape(rec)).toEqual({ rank: 3, targets: ['k', 'down'] });
    expect((await listAdapters(db)).map((a) => a.id)).toEqual([rec.id]);
    const back = await loadStoredAdapter(rec.id, db);
    expect(back.config.r).toBe(3);
    // Two imports of the same files in the same millisecond still get two records.
    const again = await importAdapterFiles('mine', f.config, f.weights, db);
    expect(again.id).not.toBe(rec.id);
  });

  it('refuses broken JSON, corrupt weights and a wrong rank, naming the file, and stores nothing', async () => {
    const db = `adapter-import-bad-${Math.random()}`;
    const f = toyFiles();
    await expect(importAdapterFiles('x', '{"r": ', f.weights, db, { config: 'cfg.json', weights: 'w.safetensors' })).rejects.toThrow(/^cfg\.json is not valid JSON/);
    await expect(importAdapterFiles('x', f.config, new Uint8Array([1, 2, 3]), db, { config: 'cfg.json', weights: 'bits.safetensors' })).rejects.toThrow(/^bits\.safetensors: /);
    const cfg = { ...JSON.parse(f.config), r: 4 };
    await expect(importAdapterFiles('x', JSON.stringify(cfg), f.weights, db, { config: 'cfg.json', weights: 'w.safetensors' })).rejects.toThrow(/^w\.safetensors: '.*lora_A\.weight' \[3, \d+\] .* disagree with r=4 in cfg\.json$/);
    expect(await listAdapters(db)).toEqual([]);
  });

  it('names an import after its weights file without the PEFT suffix', () => {
    expect(importedAdapterName('run-7 step 3.adapter_model.safetensors')).toBe('run-7 step 3');
    expect(importedAdapterName('my-lora.safetensors')).toBe('my-lora');
    expect(importedAdapterName('adapter_model.safetensors')).toBe('imported adapter');
  });
});

describe('adapterMisfit', () => {
  it('is null for the planner an adapter was made for, and names the layer count or width of another', async () => {
    const db = `adapter-misfit-${Math.random()}`;
    const f = toyFiles();
    const rec = await importAdapterFiles('toy', f.config, f.weights, db);
    const base = toyModel(new ToyTask(), { seed: 1 }).config;
    expect(adapterMisfit(rec, base)).toBeNull();
    expect(adapterMisfit(rec, { ...base, numLayers: 1 })).toMatch(/^it has layer 1; the loaded planner has 1 layers$/);
    expect(adapterMisfit(rec, { ...base, hiddenSize: base.hiddenSize + 8 })).toMatch(/wide; the loaded planner’s is \d+$/);
  });
});
