// The exported zip is what PEFT's from_pretrained reads once unzipped: one folder, PEFT's two file names, the
// config keys PEFT writes (compared with the fixture adapter PEFT saved) and PEFT's tensor names.
import { readFileSync } from 'node:fs';
import { strFromU8, unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { parseAdapter } from '../../io/peft';
import { readSafetensors } from '../../io/safetensors';
import type { AdapterRecord } from '../../store/records';
import { adapterFolderName, adapterZip } from './adapter-export';

const FIXTURE = '/work/shared/fixtures/qwen2-tiny/adapter';

function fixtureRecord(name: string): AdapterRecord {
  const config = JSON.parse(readFileSync(`${FIXTURE}/adapter_config.json`, 'utf8')) as Record<string, unknown>;
  const st = readSafetensors(new Uint8Array(readFileSync(`${FIXTURE}/adapter_model.safetensors`)), 'fixture');
  const tensors: AdapterRecord['tensors'] = {};
  for (const n of st.names()) tensors[n] = { shape: st.descriptor(n).shape, data: st.f32(n) };
  return { id: 'x', name, createdAt: 0, baseModel: 'qwen2-tiny', config, tensors };
}

describe('adapterZip', () => {
  it('holds one folder with adapter_config.json and adapter_model.safetensors under PEFT’s names, which parse back to the same adapter', () => {
    const rec = fixtureRecord('toy run 3 / step 40 (best)');
    const z = adapterZip(rec);
    expect(z.folder).toBe('toy_run_3_step_40_best');
    expect(z.fileName).toBe('toy_run_3_step_40_best.zip');
    const files = unzipSync(z.bytes);
    expect(Object.keys(files).filter((n) => !n.endsWith('/')).sort()).toEqual(['toy_run_3_step_40_best/adapter_config.json', 'toy_run_3_step_40_best/adapter_model.safetensors']);
    const config = JSON.parse(strFromU8(files['toy_run_3_step_40_best/adapter_config.json']));
    const peftKeys = Object.keys(JSON.parse(readFileSync(`${FIXTURE}/adapter_config.json`, 'utf8'))).sort();
    expect(Object.keys(config).sort()).toEqual(peftKeys);
    const weights = files['toy_run_3_step_40_best/adapter_model.safetensors'];
    const st = readSafetensors(weights, 'exported');
    expect(st.header.metadata).toEqual({ format: 'pt' });
    expect(st.names().sort()).toEqual(Object.keys(rec.tensors).sort());
    expect(st.names().every((x) => /^base_model\.model\.model\.layers\.\d+\.(self_attn|mlp)\.\w+_proj\.lora_[AB]\.weight$/.test(x))).toBe(true);
    const back = parseAdapter(config, weights);
    const orig = parseAdapter(rec.config, readFileSync(`${FIXTURE}/adapter_model.safetensors`));
    expect([...back.pairs.keys()].sort()).toEqual([...orig.pairs.keys()].sort());
    for (const [k, p] of orig.pairs) expect(back.pairs.get(k)!.B).toEqual(p.B);
  });

  it('names a folder for any adapter name, never empty or hidden', () => {
    expect(adapterFolderName('..')).toBe('adapter');
    expect(adapterFolderName(' my best! ')).toBe('my_best');
    expect(adapterFolderName('.hidden')).toBe('hidden');
  });
});
