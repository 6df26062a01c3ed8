// The layout rules of #19 and #29 that a reader relies on, checked on the source: every module of src/ sits in
// a room and imports only from the rooms below it (the table ROOMS); no import circles in src/ (type imports
// included: a circle of types is still a circle to read); nothing in src/ (tests included) importing from
// workers/ (workers are thin hosts; their protocols live in src/; a worker's URL,
// new URL('…/workers/x.ts', import.meta.url), is how src/ starts one, not an import); engine modules short.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

/** Files under `dir` whose names pass `keep` (default: modules, not tests or declarations). */
function sources(dir: string, keep = (name: string) => name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p, keep));
    else if (keep(e.name)) out.push(p);
  }
  return out;
}

/** Relative imports of `file` (static, re-exports and dynamic), as paths from the project root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+['"](\.[^'"]+)['"]/g), ...text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  const out: string[] = [];
  for (const spec of specs) {
    const base = resolve(dirname(file), spec);
    const hit = [`${base}.ts`, join(base, 'index.ts'), base].find((c) => c.endsWith('.ts') && existsSync(c));
    if (hit) out.push(relative(ROOT, hit));
  }
  return out;
}

/** Strongly connected components with more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) found.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/**
 * The rooms of src/, lowest first, and the rooms each may import from (its own always). A module is in the
 * room of the longest matching prefix. The model room holds the Qwen2 forward and backward (like llm.c's
 * gpt2_forward beside gpt2_backward); the engine serves inference over it; the trainer runs the optimizer
 * over the model and the engine's runtime; the planner room composes engine and trainer for the worker;
 * tasks (a task with its data, tools use and training run) sit above the trainer they drive.
 * Tests (*.test.ts) are consumers and may import any room.
 */
const ROOMS: Record<string, { at: string[]; may: string[] }> = {
  util: { at: ['src/util/', 'src/errors.ts'], may: [] },
  gpu: { at: ['src/gpu/'], may: ['util'] },
  kernels: { at: ['src/kernels/'], may: ['gpu', 'util'] },
  io: { at: ['src/io/'], may: ['util'] },
  model: { at: ['src/model/'], may: ['io', 'kernels', 'gpu', 'util'] },
  engine: { at: ['src/engine/'], may: ['model', 'io', 'kernels', 'gpu', 'util'] },
  tools: { at: ['src/tools/'], may: ['engine', 'util'] },
  store: { at: ['src/store/'], may: ['util'] },
  agent: { at: ['src/agent/'], may: ['tools', 'store', 'engine', 'io', 'util'] },
  trainer: { at: ['src/trainer/'], may: ['agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
  tasks: { at: ['src/tasks/'], may: ['trainer', 'agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
  planner: { at: ['src/planner/'], may: ['trainer', 'store', 'model', 'engine', 'io', 'gpu', 'util'] },
  controllers: { at: ['src/controllers/'], may: ['planner', 'tasks', 'trainer', 'agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
  ui: { at: ['src/ui/'], may: ['controllers', 'planner', 'tasks', 'trainer', 'agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
  cli: { at: ['src/cli/'], may: ['planner', 'tasks', 'trainer', 'agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
  app: { at: ['src/main.ts', 'src/element.ts'], may: ['ui', 'controllers', 'planner', 'tasks', 'trainer', 'agent', 'tools', 'store', 'model', 'engine', 'io', 'kernels', 'gpu', 'util'] },
};

/** The trainer talks to the model room and to these engine modules only (the runtime, the chat-engine contract, checkpoint loading), never to engine internals. */
const ENGINE_FOR_TRAINER = ['src/engine/runtime.ts', 'src/engine/chat-engine.ts', 'src/engine/load-checkpoint.ts'];

/**
 * Arrows against the room order that are known and owed a fix (remove an entry when its arrow goes). None
 * today: the last ones (the offline tools reading the tool-choice task's data) went when their tables moved
 * down into tools/offline-tables.ts. Keep the list, so a needed exception is named here, not hidden.
 */
const KNOWN_BACK_ARROWS = new Set<string>([]);

/** The room of a path from the project root (longest prefix), or undefined outside every room. */
function roomOf(path: string): string | undefined {
  let best: [string, number] | undefined;
  for (const [room, { at }] of Object.entries(ROOMS)) for (const p of at) if (path.startsWith(p) && (!best || p.length > best[1])) best = [room, p.length];
  return best?.[0];
}

/** Imports (file -> file) that go against ROOMS: to a room not below the importer's. */
function wrongArrows(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [from, tos] of graph) {
    const a = roomOf(from)!;
    for (const to of tos) {
      const b = roomOf(to);
      if (b === undefined || b === a || ROOMS[a].may.includes(b)) continue;
      out.push(`${from} -> ${to}`);
    }
  }
  return [...new Set(out)];
}

/** Entry points started by name rather than imported: the page's script, the library's entry, the CLI. */
const ENTRIES = ['src/main.ts', 'src/element.ts', 'src/cli/main.ts'];

/**
 * Every path (from the project root) that some file names as a module: relative specifiers in src/, workers/,
 * tests/, bench/, build/ and the configs (imports, worker URLs, vi.mock), and /src/… in HTML pages.
 */
function namedModules(): Set<string> {
  const named = new Set<string>();
  const keep = (name: string) => /\.(ts|mts|mjs|html)$/.test(name) && !name.endsWith('.d.ts');
  const dirs = ['src', 'workers', 'tests', 'bench', 'build', 'examples'].map((d) => join(ROOT, d)).filter((d) => existsSync(d));
  const all = [...dirs.flatMap((d) => sources(d, keep)), ...['index.html', 'vite.config.ts', 'vite.lib.config.ts', 'vitest.config.ts'].map((f) => join(ROOT, f))];
  for (const file of all) {
    for (const m of readFileSync(file, 'utf8').matchAll(/['"]((?:\.\.?\/|\/src\/)[^'"?\n]*)/g)) {
      const base = m[1].startsWith('/src/') ? join(ROOT, m[1]) : resolve(dirname(file), m[1]);
      for (const c of [base, `${base}.ts`, join(base, 'index.ts')]) if (existsSync(c)) named.add(relative(ROOT, c));
    }
  }
  return named;
}

describe('source layout', () => {
  const files = sources(join(ROOT, 'src'));
  const graph = new Map(files.map((f) => [relative(ROOT, f), importsOf(f)]));

  it('finds the imports it checks', () => {
    // Guards the checker itself: the runtime's resources import the KV cache, and the loop its parser.
    expect(graph.get('src/engine/runtime-resources.ts')).toContain('src/model/kv-cache.ts');
    expect(graph.get('src/agent/loop.ts')).toContain('src/agent/parse.ts');
  });

  it('puts every module in a room, and the rooms in an order: none may import a room that may import it', () => {
    expect(files.map((f) => relative(ROOT, f)).filter((f) => roomOf(f) === undefined)).toEqual([]);
    // The table is a ladder, not a tangle: following "may import" from any room never comes back to it,
    // so no two folders can import each other.
    const reach = (r: string, seen = new Set<string>()): Set<string> => {
      for (const m of ROOMS[r].may) if (!seen.has(m)) reach(m, seen.add(m));
      return seen;
    };
    for (const room of Object.keys(ROOMS)) expect([...reach(room)], room).not.toContain(room);
  });

  it('imports only from rooms below (ROOMS), apart from the known back-arrows', () => {
    const found = wrongArrows(graph);
    expect(found.filter((a) => !KNOWN_BACK_ARROWS.has(a))).toEqual([]);
    // The list only shrinks: an entry whose arrow has gone must leave it.
    expect([...KNOWN_BACK_ARROWS].filter((a) => !found.includes(a))).toEqual([]);
    // And the checker sees a wrong arrow when there is one: the model importing the engine, the engine the trainer.
    const wrong = new Map([
      ['src/model/forward.ts', ['src/engine/runtime.ts', 'src/kernels/matmul/matmul.ts']],
      ['src/engine/runtime.ts', ['src/trainer/gpu-backend.ts', 'src/model/forward.ts']],
      ['src/tasks/tool-task.ts', ['src/trainer/cpu-backend.ts']],
      ['src/agent/rollouts.ts', ['src/trainer/grpo-step.ts']],
    ]);
    expect(wrongArrows(wrong)).toEqual(['src/model/forward.ts -> src/engine/runtime.ts', 'src/engine/runtime.ts -> src/trainer/gpu-backend.ts', 'src/agent/rollouts.ts -> src/trainer/grpo-step.ts']);
  });

  it('has the trainer use the engine only through its runtime, chat-engine contract and checkpoint loading', () => {
    const internal = [...graph].flatMap(([from, tos]) => (roomOf(from) === 'trainer' ? tos.filter((to) => roomOf(to) === 'engine' && !ENGINE_FOR_TRAINER.includes(to)).map((to) => `${from} -> ${to}`) : []));
    expect(internal).toEqual([]);
  });

  it('has no import circles in src/', () => {
    expect(circles(graph)).toEqual([]);
    // And the checker sees a circle when there is one.
    expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
  });

  it('keeps every engine module under 450 lines, so each has one job a reader can hold', () => {
    // One job per file, not a line count, is the rule (#29): the decoder is one loop a reader follows down
    // without climbing back through a split, so it alone may be longer.
    const cap = (f: string) => (f === 'src/engine/batch-decoder.ts' ? 700 : 450);
    const long = files
      .filter((f) => relative(ROOT, f).startsWith('src/engine/'))
      .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([f, n]) => n > cap(f));
    expect(long).toEqual([]);
  });

  it('has no module that nothing imports: a front door (an index.ts barrel) that nobody uses misleads', () => {
    const named = namedModules();
    expect(files.map((f) => relative(ROOT, f)).filter((f) => !named.has(f) && !ENTRIES.includes(f))).toEqual([]);
  });

  it('has no file under src/ importing from workers/', () => {
    const all = sources(join(ROOT, 'src'), (name) => /\.(ts|mts|js|mjs)$/.test(name));
    const offenders = all.filter((f) => /\b(?:from|import)\s*\(?\s*['"][./]*\/workers\//.test(readFileSync(f, 'utf8')));
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([]);
  });
});
