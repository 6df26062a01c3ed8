// Loads @mlc-ai/web-xgrammar once, in the browser (page or worker, bundled by Vite) and in Node (vitest, the
// tsx CLI). Its build is an Emscripten UMD bundle with the wasm inlined as a data URI; in Node's ES-module
// scope it asks for the CommonJS `require` and `__filename` to find itself, which an ES module has not, so
// there they are lent to it (from node:module, via process.getBuiltinModule: no import a browser bundle would
// have to resolve) while the module evaluates and its wasm starts, then taken back.
type Xgrammar = typeof import('@mlc-ai/web-xgrammar');

let loading: Promise<Xgrammar> | null = null;

/** The xgrammar module, its wasm started. */
export function xgrammar(): Promise<Xgrammar> {
  loading ??= load().catch((e) => {
    loading = null;
    throw new Error(`@mlc-ai/web-xgrammar could not be loaded: ${e instanceof Error ? e.message : String(e)}`);
  });
  return loading;
}

async function load(): Promise<Xgrammar> {
  const undo = needsCommonJsGlobals() ? lendCommonJsGlobals() : () => {};
  try {
    const mod = (await import('@mlc-ai/web-xgrammar')) as Partial<Xgrammar> & { default?: Xgrammar };
    // The UMD wrapper, evaluated as an ES module (no `exports`, no AMD `define`), puts its exports on
    // globalThis.xgrammar instead; a CommonJS interop would put them under `default`.
    const global = (globalThis as { xgrammar?: Xgrammar }).xgrammar;
    const xg = [mod, mod.default, global].find((m) => typeof m?.GrammarCompiler === 'function') as Xgrammar | undefined;
    if (!xg || typeof xg.GrammarCompiler !== 'function') throw new Error('the module has no GrammarCompiler export');
    // Starts the wasm now, while the globals are lent (every factory awaits the same start).
    await xg.Testings._jsonSchemaToEBNF('{"type": "boolean"}');
    return xg;
  } finally {
    undo();
  }
}

/** Node, where the bundle takes the CommonJS path (no document, no location). */
function needsCommonJsGlobals(): boolean {
  return typeof document === 'undefined' && typeof location === 'undefined' && typeof process !== 'undefined' && !!process.versions?.node;
}

function lendCommonJsGlobals(): () => void {
  const g = globalThis as Record<string, unknown>;
  const getBuiltin = (process as unknown as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  if (typeof getBuiltin !== 'function') throw new Error(`Node ${process.versions.node} has no process.getBuiltinModule (Node >= 20.16 needed)`);
  const { createRequire } = getBuiltin('node:module') as typeof import('node:module');
  const req = createRequire(import.meta.url);
  // Its own path only places the wasm file, which is inlined: in a bundle (the GPU kit) this file's will do.
  let file: string;
  try {
    file = req.resolve('@mlc-ai/web-xgrammar');
  } catch {
    file = new URL(import.meta.url).pathname;
  }
  const lent: Record<string, unknown> = { require: req, __filename: file };
  const had = Object.keys(lent).filter((k) => k in g);
  for (const [k, v] of Object.entries(lent)) if (!had.includes(k)) g[k] = v;
  return () => {
    for (const k of Object.keys(lent)) if (!had.includes(k)) delete g[k];
  };
}
