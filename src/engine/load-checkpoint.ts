// The runtime's single entry point for weights: config + every tensor (converted on demand to f16 bits or
// f32) + the tokenizer files, from any FileSource; and loadAdapter for PEFT adapters.
import { checkLayerCount, checkWeights, parseQwen2Config, type Qwen2Config } from '../io/qwen2-config.ts';
import { parseAdapter, type LoraAdapter } from '../io/peft.ts';
import { tensorToF16, tensorToF32, type SafetensorsDtype } from '../io/safetensors.ts';
import { openSafetensors, type SafetensorsData } from '../io/safetensors-file.ts';
import { parseShardIndex, SHARD_INDEX_FILE, SINGLE_FILE } from '../io/shards.ts';
import { MissingFileError, readOptionalJson, type FileSource, type ProgressCallback } from '../io/sources.ts';
import { loadMlcCheckpoint, splitRows, type MlcCheckpoint } from '../io/mlc.ts';
import { f32ToF16Bits } from '../util/half.ts';
import { chatTemplateFromMlcChatConfig, ConvTemplateError } from './tokenizer/conv-template.ts';
import { hasChatTemplate } from './tokenizer/chat-template.ts';

export interface TensorHandle {
  name: string;
  /** Storage dtype; 'Q4F16_1' / 'Q4F32_1' for tensors dequantized from an MLC build. */
  dtype: SafetensorsDtype | 'Q4F16_1' | 'Q4F32_1';
  shape: number[];
  file: string;
  /** IEEE half bits (BF16/F32 rounded to nearest even). Converts on each call; cache if reused. */
  f16(): Uint16Array;
  f32(): Float32Array;
}

/** Where a checkpoint's chat template comes from, in the order they are tried. */
export type ChatTemplateSource = 'tokenizer_config.json' | 'chat_template.jinja' | 'mlc-chat-config.json conv_template';

export interface TokenizerFiles {
  /** tokenizer.json, or null when the checkpoint has none. */
  tokenizerJson: unknown | null;
  /** tokenizer_config.json (holds chat_template), or null. */
  tokenizerConfig: unknown | null;
  /** generation_config.json, or null. */
  generationConfig: unknown | null;
  /**
   * The template to use when tokenizer_config.json has no chat_template (Tokenizer's `chatTemplate`):
   * chat_template.jinja (newer transformers save the template there), or, in an MLC folder, the template
   * derived from mlc-chat-config.json's conv_template; null when there is neither.
   */
  chatTemplate: string | null;
  /** Which file the chat template a Tokenizer built from these files uses comes from; null: none. */
  chatTemplateSource: ChatTemplateSource | null;
}

export interface Checkpoint {
  /**
   * 'safetensors' (Hugging Face folder) or 'mlc-q4f16_1' / 'mlc-q4f32_1' (web-llm folder: `tensors` are
   * dequantized on demand, and `tensors.q4` is the build itself, which the runtime uploads as 4-bit).
   */
  format: 'safetensors' | 'mlc-q4f16_1' | 'mlc-q4f32_1';
  config: Qwen2Config;
  tensors: Map<string, TensorHandle> & { readonly q4?: MlcCheckpoint };
  tokenizer: TokenizerFiles;
  /** Drops the file bytes; tensor handles fail afterwards. Call once the weights are on the GPU. */
  release(): void;
}

export interface LoadOptions {
  onProgress?: ProgressCallback;
  /** Told of what loaded but deserves a word (a web-llm build's shards without md5sum: loadMlcCheckpoint). */
  onNote?: (note: string) => void;
  /**
   * 'mlc': the source is known to be a web-llm (MLC) folder, so config.json is not probed (a source
   * whose `knownFormat()` says 'mlc' implies this: a model web-llm has cached loads with no request).
   */
  format?: 'auto' | 'mlc';
  /** Largest slice a big safetensors file is read in (io/safetensors-file's SLICE_BYTES); for tests. */
  maxSliceBytes?: number;
}

/** Sources that can tell their format without a download (io/webllm-cache's sharedUrlSource). */
type FormatHinting = FileSource & { knownFormat?: () => Promise<'mlc' | null> };

/**
 * Loads a Hugging Face folder (config.json + model.safetensors or a sharded index), or, when there is no
 * config.json but an mlc-chat-config.json, a web-llm q4f16_1 folder presented under Hugging Face names.
 */
export async function loadCheckpoint(source: FileSource, opts: LoadOptions = {}): Promise<Checkpoint> {
  const format = opts.format ?? (await (source as FormatHinting).knownFormat?.()) ?? 'auto';
  if (format === 'mlc') return loadMlcFolder(source, opts);
  const configJson = await readOptionalJson(source, 'config.json');
  if (configJson === null) {
    if ((await readOptionalJson(source, 'mlc-chat-config.json')) !== null) return loadMlcFolder(source, opts);
    throw new Error(`${source.label}: no config.json (nor mlc-chat-config.json); is this a model folder?`);
  }
  const config = parseQwen2Config(configJson, `${source.label} config.json`);
  const index = await readOptionalJson(source, SHARD_INDEX_FILE);
  const shard = index ? parseShardIndex(index, `${source.label} ${SHARD_INDEX_FILE}`) : null;
  const files = shard ? shard.files : [SINGLE_FILE];
  if (shard) checkLayerCount(config, shard.weightMap.keys());
  const tokenizer = await readTokenizerFiles(source);
  // Headers first (a file read in slices has only its header in memory yet), so that tensors that do not
  // fit the config fail before gigabytes of data are read.
  const opened: SafetensorsData[] = [];
  const tensors = new Map<string, TensorHandle>();
  try {
    for (const file of files) {
      const data = await openSafetensors(source, file, { onProgress: opts.onProgress, maxSliceBytes: opts.maxSliceBytes });
      opened.push(data);
      for (const d of data.header.tensors.values()) {
        if (shard && shard.weightMap.get(d.name) !== file) {
          // A tensor in a shard the index does not point at would be silently shadowed; treat as corrupt.
          throw new Error(`${SHARD_INDEX_FILE} maps '${d.name}' to ${shard.weightMap.get(d.name) ?? 'no shard'} but it is in ${file}`);
        }
        if (tensors.has(d.name)) throw new Error(`tensor '${d.name}' appears in both ${tensors.get(d.name)!.file} and ${file}`);
        tensors.set(d.name, {
          name: d.name,
          dtype: d.dtype,
          shape: d.shape,
          file,
          f16: () => {
            const { bytes, tensor } = data.locate(d);
            return tensorToF16(bytes, tensor);
          },
          f32: () => {
            const { bytes, tensor } = data.locate(d);
            return tensorToF32(bytes, tensor);
          },
        });
      }
    }
    if (shard) {
      for (const [name, file] of shard.weightMap) {
        if (!tensors.has(name)) throw new Error(`${SHARD_INDEX_FILE} maps '${name}' to ${file}, which does not contain it`);
      }
    }
    checkWeights(config, tensors.values());
    for (const data of opened) await data.load();
  } catch (e) {
    for (const data of opened) data.release();
    throw e;
  }
  return {
    format: 'safetensors',
    config,
    tensors,
    tokenizer,
    release: () => {
      for (const data of opened) data.release();
    },
  };
}

async function loadMlcFolder(source: FileSource, opts: LoadOptions): Promise<Checkpoint> {
  const ck = await loadMlcCheckpoint(source, opts);
  return mlcAsCheckpoint(ck, await readMlcTokenizerFiles(source, await mlcTokenizerFiles(source, ck.chat.tokenizerFiles), ck.chat.raw));
}

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'chat_template.jinja'] as const;

/**
 * The tokenizer files worth asking an MLC folder for: those its mlc-chat-config.json lists, plus any a
 * listable source holds. A URL source is not probed for the rest, so a cached build loads offline.
 */
async function mlcTokenizerFiles(source: FileSource, listed: string[]): Promise<Set<string>> {
  const want = new Set<string>(TOKENIZER_FILES.filter((f) => listed.includes(f)));
  if (source.list) for (const f of await source.list()) if ((TOKENIZER_FILES as readonly string[]).includes(f)) want.add(f);
  return want;
}

async function readTokenizerFiles(source: FileSource): Promise<TokenizerFiles> {
  const tokenizerJson = await readOptionalJson(source, 'tokenizer.json');
  const tokenizerConfig = await readOptionalJson(source, 'tokenizer_config.json');
  const generationConfig = await readOptionalJson(source, 'generation_config.json');
  const chatTemplate = await readOptionalText(source, 'chat_template.jinja');
  return {
    tokenizerJson,
    tokenizerConfig,
    generationConfig,
    chatTemplate,
    chatTemplateSource: hasChatTemplate(tokenizerConfig) ? 'tokenizer_config.json' : chatTemplate !== null ? 'chat_template.jinja' : null,
  };
}

/**
 * An MLC folder's tokenizer files (those in `want`). web-llm downloads neither tokenizer_config.json nor
 * chat_template.jinja, so a model it has cached may have every weight on the machine but no template
 * there, or none reachable (offline). Then mlc-chat-config.json's conv_template stands in when it spells a
 * template out; when it does not, a failed download of those files fails the load, as it did before.
 */
async function readMlcTokenizerFiles(source: FileSource, want: Set<string>, chatConfig: unknown): Promise<TokenizerFiles> {
  const wanted = <T>(f: string, read: () => Promise<T | null>) => (want.has(f) ? read() : Promise.resolve(null));
  const tokenizerJson = await wanted('tokenizer.json', () => readOptionalJson(source, 'tokenizer.json'));
  const config = await attempt(() => wanted('tokenizer_config.json', () => readOptionalJson(source, 'tokenizer_config.json')));
  const generationConfig = await wanted('generation_config.json', () => readOptionalJson(source, 'generation_config.json'));
  const jinja = await attempt(() => wanted('chat_template.jinja', () => readOptionalText(source, 'chat_template.jinja')));
  const files = (chatTemplate: string | null, chatTemplateSource: ChatTemplateSource | null): TokenizerFiles => ({
    tokenizerJson,
    tokenizerConfig: config.value,
    generationConfig,
    chatTemplate,
    chatTemplateSource,
  });
  // A readable tokenizer_config.json keeps its own template: Hugging Face's, not a reconstruction.
  if (hasChatTemplate(config.value)) return files(jinja.value, 'tokenizer_config.json');
  const failure = config.failed ?? jinja.failed;
  if (failure === null && jinja.value !== null) return files(jinja.value, 'chat_template.jinja');
  const derived = derivedChatTemplate(chatConfig);
  if (derived !== null) return files(derived, 'mlc-chat-config.json conv_template');
  if (failure !== null) throw failure;
  return files(null, null);
}

/** `read()`'s value, or null and the error it threw (a file missing is not an error: readOptional*). */
async function attempt<T>(read: () => Promise<T | null>): Promise<{ value: T | null; failed: unknown }> {
  try {
    return { value: await read(), failed: null };
  } catch (e) {
    return { value: null, failed: e };
  }
}

/** The conv_template's chat template, or null when it has none this project can render. */
function derivedChatTemplate(chatConfig: unknown): string | null {
  try {
    return chatTemplateFromMlcChatConfig(chatConfig);
  } catch (e) {
    if (e instanceof ConvTemplateError) return null;
    throw e;
  }
}

async function readOptionalText(source: FileSource, name: string): Promise<string | null> {
  try {
    return new TextDecoder().decode(await source.readBytes(name));
  } catch (e) {
    if (e instanceof MissingFileError) return null;
    throw e;
  }
}

function toF16(a: Float32Array): Uint16Array {
  const out = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = f32ToF16Bits(a[i]);
  return out;
}

/**
 * An MLC q4f16_1 / q4f32_1 checkpoint under Hugging Face tensor names: fused c_attn (q, k, v rows in that order, bias
 * included) and gate_up_proj (gate rows first) are split, quantized matrices dequantized on each call.
 */
export function mlcAsCheckpoint(ck: MlcCheckpoint, tokenizer: TokenizerFiles): Checkpoint {
  const c = ck.config;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  // The build rides along with its dequantized view so that every loader (CLI, planner, trainer) gets the
  // 4-bit runtime without knowing the format.
  const tensors = Object.assign(new Map<string, TensorHandle>(), { q4: ck });
  const qd: TensorHandle['dtype'] = ck.quantization === 'q4f32_1' ? 'Q4F32_1' : 'Q4F16_1';
  const add = (name: string, shape: number[], dtype: TensorHandle['dtype'], file: string, get: () => Float32Array) => {
    tensors.set(name, { name, shape, dtype, file, f32: get, f16: () => toF16(get()) });
  };
  const fileOf = (mlcName: string) => ck.manifest.records.get(mlcName)!.dataPath;
  const fd: TensorHandle['dtype'] = ck.quantization === 'q4f32_1' ? 'F32' : 'F16';
  const f16 = (name: string, shape: number[]) => add(name, shape, fd, fileOf(name), () => ck.f32(name));
  add('model.embed_tokens.weight', [c.vocabSize, c.hiddenSize], qd, fileOf('model.embed_tokens.q_weight'), () => ck.dequantized('model.embed_tokens'));
  if (!c.tieWordEmbeddings) add('lm_head.weight', [c.vocabSize, c.hiddenSize], qd, fileOf('lm_head.q_weight'), () => ck.dequantized('lm_head'));
  f16('model.norm.weight', [c.hiddenSize]);
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}`;
    f16(`${p}.input_layernorm.weight`, [c.hiddenSize]);
    f16(`${p}.post_attention_layernorm.weight`, [c.hiddenSize]);
    const attnFile = fileOf(`${p}.self_attn.c_attn.q_weight`);
    const rows = [q, kv, kv];
    (['q', 'k', 'v'] as const).forEach((m, i) => {
      add(`${p}.self_attn.${m}_proj.weight`, [rows[i], c.hiddenSize], qd, attnFile, () => splitRows(ck.dequantized(`${p}.self_attn.c_attn`), c.hiddenSize, rows)[i]);
      add(`${p}.self_attn.${m}_proj.bias`, [rows[i]], fd, attnFile, () => splitRows(ck.f32(`${p}.self_attn.c_attn.bias`), 1, rows)[i]);
    });
    add(`${p}.self_attn.o_proj.weight`, [c.hiddenSize, q], qd, fileOf(`${p}.self_attn.o_proj.q_weight`), () => ck.dequantized(`${p}.self_attn.o_proj`));
    const I = c.intermediateSize;
    const mlpFile = fileOf(`${p}.mlp.gate_up_proj.q_weight`);
    (['gate', 'up'] as const).forEach((m, i) => {
      add(`${p}.mlp.${m}_proj.weight`, [I, c.hiddenSize], qd, mlpFile, () => splitRows(ck.dequantized(`${p}.mlp.gate_up_proj`), c.hiddenSize, [I, I])[i]);
    });
    add(`${p}.mlp.down_proj.weight`, [c.hiddenSize, I], qd, fileOf(`${p}.mlp.down_proj.q_weight`), () => ck.dequantized(`${p}.mlp.down_proj`));
  }
  checkWeights(c, tensors.values());
  return { format: `mlc-${ck.quantization}`, config: c, tensors, tokenizer, release: () => ck.release() };
}

/** Loads adapter_config.json + adapter_model.safetensors from `source`, checked against `config`. */
export async function loadAdapter(source: FileSource, config: Qwen2Config, opts: LoadOptions = {}): Promise<LoraAdapter> {
  const cfg = await source.readJson('adapter_config.json');
  const weights = await source.readBytes('adapter_model.safetensors', opts.onProgress);
  return parseAdapter(cfg, weights, {
    base: config,
    configFile: `${source.label} adapter_config.json`,
    weightsFile: `${source.label} adapter_model.safetensors`,
  });
}
