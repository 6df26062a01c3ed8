// The Python tool: model-written code runs in Pyodide inside a dedicated worker, one worker per program.
// A program can rebind anything in its interpreter (the evaluator, builtins, sys.stdout, modules) and leave
// asyncio work scheduled, so no later run may share an interpreter with it: each run gets a worker no code
// has touched, and the worker is thrown away when the run ends. To keep that cheap, one spare worker is
// always loading while the agent thinks, and after the first load workers start from a memory snapshot of a
// freshly started interpreter (about 0.5 s instead of 3 s in Node). A run that goes past its time limit is
// stopped by terminating its worker (the only way to stop a busy wasm thread without cross-origin isolation).
import { AgentFlowError, type ErrorCategory } from '../errors';
import * as Comlink from 'comlink';
import { untilAborted } from '../util/abort';
import type { PythonRunResult, PythonWorkerApi } from './python-sandbox';
import { watchWorker, type WorkerWatch } from '../util/worker-watch';
import { PYTHON_CARD } from './cards';
import type { Tool, ToolContext, ToolResult } from './tool';

/** A started Python worker: its API and the watch that tells when it is gone. */
export interface PythonWorkerHandle {
  api: Comlink.Remote<PythonWorkerApi>;
  watch: WorkerWatch;
}

export interface PythonToolOptions {
  /**
   * Folder URL (ending in '/') that serves Pyodide's files: pyodide.mjs, pyodide.asm.mjs, pyodide.asm.wasm,
   * python_stdlib.zip, pyodide-lock.json. Default: defaultPyodideIndexURL(). (The Node worker ignores it.)
   */
  indexURL?: string;
  /** Upper bound on a run when the caller's ToolContext allows more (default 30 s). */
  maxRunMs?: number;
  /** Time allowed for starting a worker and loading Pyodide, not counted in a run's limit (default 120 s). */
  loadTimeoutMs?: number;
  /** Characters of output kept; the rest is cut with a note (default 20,000). */
  maxOutputChars?: number;
  /** Creates a browser worker (tests and embedding pages may substitute their own build of it). */
  createWorker?: () => Worker;
  /** Starts a worker of any kind (the Node tool passes a worker thread); wins over createWorker. */
  spawn?: () => PythonWorkerHandle;
  /** Start later workers from a memory snapshot of the first one's fresh interpreter (default true). */
  snapshots?: boolean;
}

export class PythonToolError extends AgentFlowError {
  override readonly category: ErrorCategory = 'tool';
  constructor(message: string) {
    super(message);
    this.name = 'PythonToolError';
  }
}

/**
 * Where Pyodide's files are served. In development Vite serves node_modules directly. The production build
 * has them in `pyodide/` at the top of dist/ (see build/pyodide-assets.ts), a sibling of the `assets/` folder
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

/** A browser worker made by `create`, watched and wrapped. */
export function browserPythonWorker(create: () => Worker): PythonWorkerHandle {
  const worker = create();
  return { api: Comlink.wrap<PythonWorkerApi>(worker), watch: watchWorker(worker, 'python') };
}

interface Session {
  handle: PythonWorkerHandle;
  ready: Promise<string>;
  /** Pyodide has loaded in this worker (ready resolved). */
  loaded: boolean;
  /** Code was handed to this worker: it can never run another program. */
  used: boolean;
}

export class PythonTool implements Tool {
  readonly card = PYTHON_CARD;
  /** A worker that is loading or loaded and has run nothing. */
  private spare: Session | undefined;
  private readonly live = new Set<Session>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly indexURL: string;
  private readonly maxRunMs: number;
  private readonly loadTimeoutMs: number;
  private readonly maxOutputChars: number;
  private readonly spawn: () => PythonWorkerHandle;
  private readonly snapshots: boolean;
  private snapshot: Uint8Array | undefined;
  private snapshotRequested = false;
  /** Some worker has loaded Pyodide: later loads are from the browser's cache (and a snapshot), much faster. */
  private everLoaded = false;
  private disposed = false;
  /** Workers started so far (each run uses its own; one more is always loading as the spare). */
  workersStarted = 0;

  constructor(options: PythonToolOptions = {}) {
    this.indexURL = options.indexURL ?? defaultPyodideIndexURL();
    if (!this.indexURL.endsWith('/')) throw new PythonToolError(`python tool: indexURL must end with '/', got ${this.indexURL}`);
    this.maxRunMs = options.maxRunMs ?? 30_000;
    this.loadTimeoutMs = options.loadTimeoutMs ?? 120_000;
    this.maxOutputChars = options.maxOutputChars ?? 20_000;
    const create = options.createWorker ?? defaultWorker;
    this.spawn = options.spawn ?? (() => browserPythonWorker(create));
    this.snapshots = options.snapshots ?? true;
  }

  /** Starts a worker and loads Pyodide now (otherwise the first run does). Resolves with Python's version. */
  warmUp(): Promise<string> {
    this.spare ??= this.start();
    return this.spare.ready;
  }

  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const code = args.code;
    if (typeof code !== 'string' || !code.trim()) return Promise.resolve({ ok: false, output: '', error: "python: field 'code' must be non-empty Python code" });
    // One program runs at a time; calls queue behind each other. The caller's clock stops while a call waits
    // and restarts when its turn comes (waiting for its fresh worker to load counts, as it is this call's work).
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
    for (const s of [...this.live]) this.retire(s, 'the python tool was closed');
    this.spare = undefined;
  }

  private start(): Session {
    const handle = this.spawn();
    this.workersStarted++;
    const makeSnapshot = this.snapshots && !this.snapshot && !this.snapshotRequested;
    if (makeSnapshot) this.snapshotRequested = true;
    const init = handle.api.init(this.indexURL, this.snapshot ? { snapshot: this.snapshot } : { makeSnapshot }).then(
      (r) => {
        if (r.snapshot && !this.snapshot) this.snapshot = r.snapshot;
        return r.version;
      },
      (e: unknown) => {
        // Said to the model and the user alike: where Python was to come from, and what the browser said.
        throw new PythonToolError(`python: Pyodide could not load from ${this.indexURL}: ${e instanceof Error ? e.message : String(e)}`);
      },
    );
    const failed = handle.watch.gone.catch((e: Error) => {
      throw new PythonToolError(`python worker failed to start: ${e.message}`);
    });
    const ready = withTimeout(
      Promise.race([init, failed]),
      this.loadTimeoutMs,
      () => new PythonToolError(`python: Pyodide did not load from ${this.indexURL} within ${this.loadTimeoutMs} ms`),
    );
    const session: Session = { handle, ready, loaded: false, used: false };
    this.live.add(session);
    ready.then(
      () => {
        session.loaded = true;
        this.everLoaded = true;
      },
      () => {
        if (makeSnapshot && !this.snapshot) this.snapshotRequested = false;
        this.retire(session, 'it failed to start');
      },
    );
    return session;
  }

  private retire(session: Session, why: string): void {
    if (!this.live.delete(session)) return;
    if (this.spare === session) this.spare = undefined;
    session.handle.api[Comlink.releaseProxy]();
    session.handle.watch.terminate(why);
  }

  /** The spare (or a new worker), and a new spare loading behind it. */
  private take(): Session {
    const session = this.spare ?? this.start();
    this.spare = undefined;
    return session;
  }

  private async runNow(code: string, ctx: ToolContext): Promise<ToolResult> {
    if (ctx.signal.aborted) return { ok: false, output: '', error: 'python: cancelled' };
    const session = this.take();
    try {
      return await this.runIn(session, code, ctx);
    } finally {
      if (!session.used && this.live.has(session) && !this.spare && !this.disposed) {
        // Cancelled before its code went in (a Stop while Pyodide loads): the worker is as good as new, and
        // the next call takes it rather than starting the load over.
        this.spare = session;
      } else {
        // Whatever the program did to its interpreter, and whatever it left scheduled, ends with its worker.
        this.retire(session, 'its run ended');
        if (!this.disposed) this.spare ??= this.start();
      }
    }
  }

  private async runIn(session: Session, code: string, ctx: ToolContext): Promise<ToolResult> {
    // Only a call that really waits for its worker to load says so (the spare is usually ready).
    const loading = !session.loaded;
    if (loading) ctx.note?.(this.everLoaded ? 'starting Python' : 'starting Python (first use)');
    try {
      // A Stop while Pyodide loads answers at once: the load goes on for the next call.
      await untilAborted(session.ready, ctx.signal);
    } catch (e) {
      if (ctx.signal.aborted) return { ok: false, output: '', error: 'python: cancelled' };
      return { ok: false, output: '', error: e instanceof Error ? e.message : String(e) };
    } finally {
      if (loading) ctx.note?.(null);
    }
    if (ctx.signal.aborted) return { ok: false, output: '', error: 'python: cancelled' };
    session.used = true;
    const limit = Math.min(ctx.timeoutMs > 0 ? ctx.timeoutMs : this.maxRunMs, this.maxRunMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<ToolResult>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, output: '', error: `python: the code ran longer than the time limit of ${limit} ms and was stopped (endless loop?)` }),
        limit,
      );
      onAbort = () => resolve({ ok: false, output: '', error: 'python: cancelled' });
      ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([session.handle.watch.race(session.handle.api.run(code)).then((r) => this.format(r)), stopped]);
    } catch (e) {
      // The worker died under the call (e.g. out of memory).
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
    // A non-zero exit is the error; a zero one is said beside the output, as it ended the program early.
    if (r.exitCode === 0) parts.push('[the program exited with code 0]');
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
