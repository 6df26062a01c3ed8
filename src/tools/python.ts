// The Python tool: model-written code runs in Pyodide inside a dedicated module worker. A run that goes
// past its time limit is stopped by terminating the worker (the only way to stop a busy wasm thread
// without cross-origin isolation); the next call starts a fresh worker.
import * as Comlink from 'comlink';
import type { PythonRunResult, PythonWorkerApi } from '../../workers/python.worker';
import { PYTHON_CARD } from './cards';
import type { Tool, ToolContext, ToolResult } from './types';

export interface PythonToolOptions {
  /**
   * Folder URL (ending in '/') that serves Pyodide's files: pyodide.mjs, pyodide.asm.mjs, pyodide.asm.wasm,
   * python_stdlib.zip, pyodide-lock.json. Default: defaultPyodideIndexURL().
   */
  indexURL?: string;
  /** Upper bound on a run when the caller's ToolContext allows more (default 30 s). */
  maxRunMs?: number;
  /** Time allowed for starting a worker and loading Pyodide, not counted in a run's limit (default 120 s). */
  loadTimeoutMs?: number;
  /** Characters of output kept; the rest is cut with a note (default 20,000). */
  maxOutputChars?: number;
  /** Creates the worker (tests and embedding pages may substitute their own build of it). */
  createWorker?: () => Worker;
}

export class PythonToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PythonToolError';
  }
}

/**
 * Where Pyodide's files are served. In development Vite serves node_modules directly. The production build
 * has them in `pyodide/` at the top of dist/ (see pyodide-assets.ts), a sibling of the `assets/` folder
 * this module's chunk lands in, so the folder is found from the chunk's own URL: that works from any
 * sub-path and from any page of the build.
 */
export function defaultPyodideIndexURL(): string {
  if (import.meta.env.DEV) return new URL(`${import.meta.env.BASE_URL ?? '/'}node_modules/pyodide/`, globalThis.location?.href ?? 'http://localhost/').href;
  // A variable, not a literal, so that Vite does not try to bundle the folder as an asset.
  const fromChunk = '../pyodide/';
  return new URL(fromChunk, import.meta.url).href;
}

function defaultWorker(): Worker {
  return new Worker(new URL('../../workers/python.worker.ts', import.meta.url), { type: 'module', name: 'python' });
}

interface Session {
  worker: Worker;
  api: Comlink.Remote<PythonWorkerApi>;
  ready: Promise<string>;
}

export class PythonTool implements Tool {
  readonly card = PYTHON_CARD;
  private session: Session | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly indexURL: string;
  private readonly maxRunMs: number;
  private readonly loadTimeoutMs: number;
  private readonly maxOutputChars: number;
  private readonly createWorker: () => Worker;
  private disposed = false;
  /** Workers started so far (a restart after a timeout starts another). */
  workersStarted = 0;

  constructor(options: PythonToolOptions = {}) {
    this.indexURL = options.indexURL ?? defaultPyodideIndexURL();
    if (!this.indexURL.endsWith('/')) throw new PythonToolError(`python tool: indexURL must end with '/', got ${this.indexURL}`);
    this.maxRunMs = options.maxRunMs ?? 30_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 120_000;
    this.maxOutputChars = options.maxOutputChars ?? 20_000;
    this.createWorker = options.createWorker ?? defaultWorker;
  }

  /** Starts the worker and loads Pyodide now (otherwise the first run does). Resolves with Python's version. */
  warmUp(): Promise<string> {
    return this.start().ready;
  }

  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const code = args.code;
    if (typeof code !== 'string' || !code.trim()) return Promise.resolve({ ok: false, output: '', error: "python: field 'code' must be non-empty Python code" });
    // One worker runs one program at a time; calls queue behind each other. The caller's clock stops while a
    // call waits and restarts when its turn comes (loading Pyodide on the first run counts, as it is this
    // call's work).
    ctx.queued?.();
    const next = this.queue.then(() => {
      if (!ctx.signal.aborted) ctx.started?.();
      return this.runNow(code, ctx);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  dispose(): void {
    this.disposed = true;
    this.stop();
  }

  private start(): Session {
    if (this.session) return this.session;
    const worker = this.createWorker();
    this.workersStarted++;
    const api = Comlink.wrap<PythonWorkerApi>(worker);
    const failed = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (e) => reject(new PythonToolError(`python worker failed to start: ${e.message || 'script error'}`)), { once: true });
    });
    const ready = withTimeout(
      Promise.race([api.init(this.indexURL), failed]),
      this.loadTimeoutMs,
      () => new PythonToolError(`python: Pyodide did not load from ${this.indexURL} within ${this.loadTimeoutMs} ms`),
    );
    const session: Session = { worker, api, ready };
    this.session = session;
    ready.catch(() => {
      if (this.session === session) this.stop();
    });
    return session;
  }

  private stop(): void {
    if (!this.session) return;
    this.session.api[Comlink.releaseProxy]();
    this.session.worker.terminate();
    this.session = undefined;
  }

  private async runNow(code: string, ctx: ToolContext): Promise<ToolResult> {
    if (ctx.signal.aborted) return { ok: false, output: '', error: 'python: cancelled' };
    const session = this.start();
    try {
      await session.ready;
    } catch (e) {
      return { ok: false, output: '', error: e instanceof Error ? e.message : String(e) };
    }
    // The caller may have given up while Pyodide was loading.
    if (ctx.signal.aborted) return { ok: false, output: '', error: 'python: cancelled' };
    const limit = Math.min(ctx.timeoutMs > 0 ? ctx.timeoutMs : this.maxRunMs, this.maxRunMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<ToolResult>((resolve) => {
      timer = setTimeout(() => {
        this.stop();
        // Start the replacement now, so Pyodide is loading while the agent reads the error.
        if (!this.disposed) this.start();
        resolve({ ok: false, output: '', error: `python: the code ran longer than the time limit of ${limit} ms and was stopped (endless loop?)` });
      }, limit);
      onAbort = () => {
        this.stop();
        resolve({ ok: false, output: '', error: 'python: cancelled' });
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([session.api.run(code).then((r) => this.format(r)), stopped]);
    } catch (e) {
      // The worker died under the call (e.g. out of memory): start afresh next time.
      this.stop();
      return { ok: false, output: '', error: `python: the worker failed: ${e instanceof Error ? e.message : String(e)}` };
    } finally {
      clearTimeout(timer);
      if (onAbort) ctx.signal.removeEventListener('abort', onAbort);
    }
  }

  private format(r: PythonRunResult): ToolResult {
    const parts: string[] = [];
    if (r.stdout) parts.push(r.stdout.replace(/\n$/, ''));
    if (r.value !== null) parts.push(r.value);
    if (r.stderr) parts.push(`[stderr]\n${r.stderr.replace(/\n$/, '')}`);
    if (!r.ok) {
      const output = this.cut(parts.join('\n'));
      return { ok: false, output, error: this.cut(r.error ?? 'python: unknown error') };
    }
    const output = parts.length ? parts.join('\n') : '(the code printed nothing; use print() to show the result)';
    return { ok: true, output: this.cut(output) };
  }

  private cut(s: string): string {
    if (s.length <= this.maxOutputChars) return s;
    return `${s.slice(0, this.maxOutputChars)}\n… [output cut: ${s.length - this.maxOutputChars} more characters]`;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, err: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(err()), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}
