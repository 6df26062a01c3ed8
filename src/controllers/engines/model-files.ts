// What loading a model reads, how big it is and how much of it this browser already has, for both engines:
// the planner (a Hugging Face folder, or a web-llm build read 4-bit) and the shared web-llm model. The cache
// is always consulted; the network only when the caller says so (the user pressed "Check download size"):
// HEAD requests for file sizes, and GETs of the small JSON indexes that list a model's weight files.
import { SHARD_INDEX_FILE, SINGLE_FILE } from '../../io/shards';
import { webllmModelUrl } from '../../io/webllm-cache';
import { isModelCache, sizeOf } from './model-cache';

export interface ModelFile {
  url: string;
  /** null: not cached, and the size was not asked of the server (or it did not say). */
  bytes: number | null;
  cached: boolean;
}

export interface SizeReport {
  files: ModelFile[];
  /** Sum of the sizes known. */
  total: number;
  /** Of which this browser has cached. */
  cached: number;
  /** Files whose size is unknown: `total` is then a lower bound. */
  unknown: number;
  /** Every file the load reads is in this browser: loading downloads nothing. */
  complete: boolean;
  /**
   * Hosts a request to which failed outright (offline, no such host, or a server that does not let this page
   * read its answer): the sizes of their files are unknown for that reason, not because the server kept quiet.
   */
  unreachable: string[];
}

export interface SizeOptions {
  /** Ask the servers (HEAD requests, the JSON indexes). Default false: the cache only. */
  network?: boolean;
  fetch?: typeof fetch;
  caches?: CacheStorage;
  signal?: AbortSignal;
}

type Probe = { state: 'present'; bytes: number | null; cached: boolean } | { state: 'missing' } | { state: 'unknown' };

const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json', 'chat_template.jinja'];

class Prober {
  /** See SizeReport.unreachable. */
  readonly unreachable = new Set<string>();
  constructor(private readonly o: SizeOptions) {}

  private failed(url: string, e: unknown): void {
    if (this.o.signal?.aborted) throw e;
    this.unreachable.add(new URL(url).host);
  }

  private async cached(url: string): Promise<Response | null> {
    const storage = this.o.caches ?? globalThis.caches;
    if (!storage) return null;
    for (const name of await storage.keys()) {
      if (!isModelCache(name)) continue;
      const hit = await (await storage.open(name)).match(url);
      if (hit) return hit;
    }
    return null;
  }

  /** Whether the cache holds `url` (a file whose size is known already). */
  async inCache(url: string): Promise<boolean> {
    return (await this.cached(url))?.status === 200;
  }

  /** A file's size: from the cache, else (with network) a HEAD request. 404 (remembered or answered): missing. */
  async probe(url: string): Promise<Probe> {
    const hit = await this.cached(url);
    if (hit) return hit.status === 404 ? { state: 'missing' } : { state: 'present', bytes: await sizeOf(hit), cached: true };
    if (!this.o.network) return { state: 'unknown' };
    try {
      const res = await (this.o.fetch ?? globalThis.fetch)(url, { method: 'HEAD', signal: this.o.signal });
      if (res.status === 404) return { state: 'missing' };
      if (!res.ok) return { state: 'unknown' };
      const len = res.headers.get('content-length');
      return { state: 'present', bytes: len && /^\d+$/.test(len) ? Number(len) : null, cached: false };
    } catch (e) {
      this.failed(url, e);
      return { state: 'unknown' };
    }
  }

  /** A small JSON file (an index of weight files): from the cache, else (with network) downloaded, not kept. */
  async json(url: string): Promise<{ probe: Probe; value: unknown }> {
    const hit = await this.cached(url);
    let res: Response | null = hit;
    if (!res && this.o.network) {
      try {
        res = await (this.o.fetch ?? globalThis.fetch)(url, { signal: this.o.signal });
      } catch (e) {
        this.failed(url, e);
        return { probe: { state: 'unknown' }, value: undefined };
      }
    }
    if (!res) return { probe: { state: 'unknown' }, value: undefined };
    if (res.status === 404) return { probe: { state: 'missing' }, value: undefined };
    if (!res.ok) return { probe: { state: 'unknown' }, value: undefined };
    const text = await res.text();
    try {
      return { probe: { state: 'present', bytes: new TextEncoder().encode(text).byteLength, cached: !!hit }, value: JSON.parse(text) };
    } catch {
      return { probe: { state: 'unknown' }, value: undefined };
    }
  }
}

class FileList {
  readonly files: ModelFile[] = [];
  add(url: string, p: Probe): void {
    if (p.state === 'missing' || this.files.some((f) => f.url === url)) return;
    this.files.push(p.state === 'present' ? { url, bytes: p.bytes, cached: p.cached } : { url, bytes: null, cached: false });
  }
}

/**
 * Sizes of what loading the planner from `base` (a folder URL ending in '/') reads; `mlc`: the planner reads
 * a web-llm build at web-llm's URL (Planner uses the shared model's download).
 */
export async function plannerFiles(base: string, o: SizeOptions & { mlc?: boolean } = {}): Promise<SizeReport> {
  const p = new Prober(o);
  const list = new FileList();
  const at = (f: string) => new URL(f, base).href;
  const config: Probe = o.mlc ? { state: 'missing' } : await p.probe(at('config.json'));
  if (config.state === 'missing') {
    await mlcFiles(base, p, list, { tokenizerConfig: true });
    return report(list.files, p.unreachable);
  }
  list.add(at('config.json'), config);
  const index = await p.json(at(SHARD_INDEX_FILE));
  list.add(at(SHARD_INDEX_FILE), index.probe);
  const weightMap = (index.value as { weight_map?: Record<string, string> } | undefined)?.weight_map;
  const weights = index.probe.state === 'missing' ? [SINGLE_FILE] : weightMap ? [...new Set(Object.values(weightMap))] : [];
  for (const f of weights) list.add(at(f), await p.probe(at(f)));
  for (const f of TOKENIZER_FILES) list.add(at(f), await p.probe(at(f)));
  return report(list.files, p.unreachable);
}

/** A web-llm build's files under `base` (its '.../resolve/main/' URL), as web-llm and the planner read them. */
async function mlcFiles(base: string, p: Prober, list: FileList, o: { tokenizerConfig: boolean }): Promise<void> {
  const at = (f: string) => new URL(f, base).href;
  const chat = await p.json(at('mlc-chat-config.json'));
  list.add(at('mlc-chat-config.json'), chat.probe);
  const manifest = await p.json(at('tensor-cache.json'));
  list.add(at('tensor-cache.json'), manifest.probe);
  const records = (manifest.value as { records?: Array<{ dataPath?: unknown; nbytes?: unknown }> } | undefined)?.records ?? [];
  for (const r of records) {
    if (typeof r.dataPath !== 'string') continue;
    // The manifest gives each shard's size: only whether it is cached needs looking up.
    const nbytes = typeof r.nbytes === 'number' ? r.nbytes : null;
    list.add(at(r.dataPath), { state: 'present', bytes: nbytes, cached: await p.inCache(at(r.dataPath)) });
  }
  if (manifest.probe.state === 'unknown') list.add(at('params_shard_0.bin'), { state: 'unknown' });
  const tokenizers = (chat.value as { tokenizer_files?: unknown } | undefined)?.tokenizer_files;
  const names = Array.isArray(tokenizers) ? tokenizers.filter((t): t is string => typeof t === 'string') : ['tokenizer.json'];
  for (const f of names) if (f !== 'tokenizer_config.json' || o.tokenizerConfig) list.add(at(f), await p.probe(at(f)));
  // web-llm never downloads tokenizer_config.json; the planner asks for it (its chat template), optional.
  if (o.tokenizerConfig && !names.includes('tokenizer_config.json')) {
    const tc = await p.probe(at('tokenizer_config.json'));
    if (tc.state === 'present') list.add(at('tokenizer_config.json'), tc);
  }
}

/** Sizes of what web-llm loads for a model record: the build's files and its compiled library. */
export async function webllmFiles(record: { model: string; model_lib: string }, o: SizeOptions = {}): Promise<SizeReport> {
  const p = new Prober(o);
  const list = new FileList();
  await mlcFiles(webllmModelUrl(record.model), p, list, { tokenizerConfig: false });
  list.add(record.model_lib, await p.probe(record.model_lib));
  return report(list.files, p.unreachable);
}

/** Both engines' files together: a file both read (one download shared) counts once. */
export function combine(...reports: SizeReport[]): SizeReport {
  const byUrl = new Map<string, ModelFile>();
  for (const r of reports) for (const f of r.files) if (!byUrl.has(f.url)) byUrl.set(f.url, f);
  return report([...byUrl.values()], reports.flatMap((r) => r.unreachable));
}

function report(files: ModelFile[], unreachable: Iterable<string> = []): SizeReport {
  let total = 0;
  let cached = 0;
  let unknown = 0;
  for (const f of files) {
    if (f.bytes === null) unknown++;
    else total += f.bytes;
    if (f.cached && f.bytes !== null) cached += f.bytes;
  }
  return { files, total, cached, unknown, complete: files.length > 0 && files.every((f) => f.cached), unreachable: [...new Set(unreachable)] };
}
