// A stored adapter exported as one zip holding a folder with PEFT's file names (adapter_config.json,
// adapter_model.safetensors), so `PeftModel.from_pretrained(model, "<folder>")` loads it as unzipped, with no
// renaming. The weights carry safetensors' `format: pt` metadata, as PEFT's own saves do.
import { strToU8, zipSync } from 'fflate';
import { writeSafetensors } from '../../io/safetensors';
import type { AdapterRecord } from '../../store/records';

/** The folder (and zip) name for an adapter: its name with anything a file system may refuse replaced by '_'. */
export function adapterFolderName(name: string): string {
  const safe = name.trim().replace(/[^\w.-]+/g, '_').replace(/^[._]+|[._]+$/g, '');
  return safe || 'adapter';
}

/** The zip's bytes and its file name: `<folder>.zip` holding `<folder>/adapter_config.json` and `<folder>/adapter_model.safetensors`. */
export function adapterZip(rec: AdapterRecord): { fileName: string; folder: string; bytes: Uint8Array } {
  const folder = adapterFolderName(rec.name);
  const weights = writeSafetensors(
    Object.entries(rec.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })),
    { format: 'pt' },
  );
  // Stored, not deflated: float weights barely compress, and a store-only zip opens anywhere.
  const bytes = zipSync(
    { [folder]: { 'adapter_config.json': strToU8(`${JSON.stringify(rec.config, null, 2)}\n`), 'adapter_model.safetensors': weights } },
    { level: 0 },
  );
  return { fileName: `${folder}.zip`, folder, bytes };
}
