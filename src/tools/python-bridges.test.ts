// Layer 2 of cutPythonBridges on its own: Pyodide's JS API no longer reaches the host, whatever gets to it.
// (Layer 1, Python holding no way to that API, is proven by the escape attempts in python-node.test.ts and the
// browser test; this covers the case where some way is found anyway.)
import { describe, expect, it } from 'vitest';
import { loadPyodide } from 'pyodide';
import { cutPythonBridges } from './python-bridges';

describe('cutPythonBridges', () => {
  it("strips Pyodide's API of host file systems, sockets and code loading, and Python of its JS modules", async () => {
    const py = await loadPyodide({ jsglobals: Object.create(null) });
    const run = py.pyimport('pyodide.code').eval_code as (code: string) => unknown;
    cutPythonBridges(py);
    const api = py as unknown as Record<string, (...a: unknown[]) => unknown> & {
      _api: Record<string, (...a: unknown[]) => unknown>;
      _module: { FS: Record<string, unknown> & { filesystems: Record<string, unknown> } } & Record<string, unknown>;
    };
    expect(() => api.mountNodeFS('/host', '/')).toThrow(/pyodide\.mountNodeFS is disabled/);
    expect(() => api.loadPackage('x')).toThrow(/disabled/);
    expect(() => api.runPython('1')).toThrow(/disabled/);
    expect(() => api._api.initializeNodeSockFS()).toThrow(/disabled/);
    expect(() => (api._module.FS.mount as () => void)()).toThrow(/FS\.mount is disabled/);
    expect(Object.keys(api._module.FS.filesystems)).toEqual(['MEMFS']);
    expect(api._module.NODEFS).toBeUndefined();
    // Python still runs, without the modules.
    expect(run('import sys\nlen([k for k in sys.modules if k.split(".")[0] in ("js", "pyodide_js")])')).toBe(0);
    expect(run('6 * 7')).toBe(42);
  }, 60_000);
});
