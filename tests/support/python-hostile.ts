// Model-written programs that try to outlive their run (#18.1, #18.2), shared by the Python tool's tests in
// Chromium and in Node: the same sandbox core runs in both, so both must give the same answers.

/** Rebinds the evaluator, the runner, print and a module: a later run must not see any of it. */
export const FORGE = [
  'import builtins, sys, __main__, pyodide.code',
  'pyodide.code.eval_code = lambda *a, **k: "forged"',
  '__main__._agentflow_run = lambda code: [True, "forged", None]',
  '__main__.eval_code = pyodide.code.eval_code',
  'builtins.print = lambda *a, **k: sys.__stdout__.write("forged\\n")',
  'import math; math.sqrt = lambda x: 7',
].join('\n');

/** What a clean interpreter prints for this: '42 4.0'. */
export const AFTER_FORGE = 'import math\nprint(6*7, math.sqrt(16))';

/** Leaves a busy asyncio callback behind and prints 'scheduled'; a later run must not be charged for it. */
export const LEAVE_BUSY_WORK = ['import asyncio', 'def spin():', '    while True: pass', 'asyncio.get_event_loop().call_later(0.01, spin)', 'print("scheduled")'].join('\n');
