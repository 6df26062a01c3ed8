// File names that a manifest (model.safetensors.index.json's weight_map, tensor-cache.json's dataPath)
// gives for other files of the same model. They are resolved against the model's folder or URL, where an
// absolute URL, '//host/…', a backslash or an encoded '..' would reach another site or leave the folder:
// only plain relative names are accepted.

const SEGMENT = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/;

/** True for 'model-00001-of-00002.safetensors' or 'sub/params_shard_0.bin'; false for anything else. */
export function isModelFileName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 1024 && name.split('/').every((s) => SEGMENT.test(s));
}

export const MODEL_FILE_NAME_RULE = "a file name inside the model's folder (letters, digits, '.', '_', '+', '-', '/' between folder names; no URL or '..')";
