// The Experiments tab running a subset (#20.3, #20.5), in Chromium: while it runs it says which item (as the
// subset box numbers it), turn and module is running; the run is named by model and date, the name is
// stored, and each result row shows the question, the expected and the given answer side by side.
import { describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import { listConversations } from '../store/conversations';
import { listExperiments } from '../controllers/experiments/experiment-store';
import './experiments-panel';
import type { AgentflowExperimentsPanel } from './experiments-panel';

const reply: ProbeReplyFn = (module, messages) => {
  const q = messages.map((m) => m.content).join('\n');
  const text =
    module === 'planner' ? JSON.stringify({ justification: 'j', context: '', sub_goal: 'Echo it', tool_name: 'echo' })
    : module === 'executor' ? '{"text": "x"}'
    : module === 'generator' ? (q.includes('colour') ? '<answer>red</answer>' : '<answer>5</answer>')
    : 'Echo it.';
  // Slow enough that each module's turn shows, fast enough for a short test.
  return { text, delayMs: 120 };
};

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

const text = (el: AgentflowExperimentsPanel, selector: string) => (el.renderRoot.querySelector(selector)?.textContent ?? '').replace(/\s+/g, ' ').trim();

describe('<agentflow-experiments-panel> running a subset', () => {
  it('shows item, turn and module while it runs; names the run by model and date; shows question, expected and given answers', async () => {
    const dbName = `experiments-${Math.random()}`;
    const registry = new ToolRegistry();
    registry.register(echo);
    const el = document.createElement('agentflow-experiments-panel') as AgentflowExperimentsPanel;
    el.dbName = dbName;
    el.registry = registry;
    const engine = new ProbeEngine(reply, 'planner:probe-model');
    el.engines = { planner: engine, shared: engine };
    document.body.append(el);
    try {
      el.importText(['{"pid": "a1", "query": "What is 2+2?", "answer": "4"}', '{"pid": "a2", "query": "Name a primary colour.", "answer": "red"}', '{"pid": "a3", "query": "What is 2+3?", "answer": 5}'].join('\n'), 'mini.jsonl');
      await el.updateComplete;
      (el.renderRoot.querySelector('#subset') as HTMLInputElement).value = '2-3';
      (el.renderRoot.querySelector('#turns') as HTMLInputElement).value = '1';
      // Every progress line and the run's Delete button as they render (each lasts ~120 ms: polling could
      // miss one on a loaded machine).
      const progress: string[] = [];
      const deleteRun = () => el.renderRoot.querySelector<HTMLButtonElement>('button[aria-label^="Delete run "]');
      const deleteWhileRunning = new Set<boolean | undefined>();
      const observer = new MutationObserver(() => {
        const now = text(el, '[data-testid="experiment-progress"]');
        if (now && now !== progress.at(-1)) progress.push(now);
        if (now) deleteWhileRunning.add(deleteRun()?.disabled);
      });
      observer.observe(el.renderRoot, { subtree: true, childList: true, characterData: true, attributes: true });
      const before = Date.now();
      [...el.renderRoot.querySelectorAll('button')].find((b) => b.textContent === 'Run')!.click();
      await expect.poll(() => progress.length, { timeout: 10_000 }).toBeGreaterThan(0);
      await expect.poll(() => el.renderRoot.querySelector('[data-testid="experiment-progress"]'), { timeout: 10_000 }).toBeNull();
      observer.disconnect();
      // Numbered as typed in the subset box (#2, #3), with the benchmark's own id when it differs.
      expect(progress).toContain('Item 1 of 2 (#2, a2), turn 1: Planning…');
      expect(progress).toContain('Item 2 of 2 (#3, a3), Analysing the query…');
      // The run in progress was listed (once its record was read back), and could not be deleted under its own feet.
      expect(deleteWhileRunning.has(true)).toBe(true);
      expect(deleteWhileRunning.has(false)).toBe(false);

      const [run] = await listExperiments(dbName);
      expect(run.createdAt).toBeGreaterThanOrEqual(before);
      const d = new Date(run.createdAt);
      const p = (n: number) => String(n).padStart(2, '0');
      expect(run.name).toBe(`probe-model · mini × 2 · 1 turn · ${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`);
      expect(run.config.adapter).toBeNull();
      await expect.poll(() => text(el, '[data-testid="runs"] tbody tr td .name')).toBe(run.name);
      expect(deleteRun()?.disabled).toBe(false);

      await expect.poll(() => el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr').length).toBe(2);
      expect([...el.renderRoot.querySelectorAll('[data-testid="items"] thead th')].map((th) => th.textContent)).toEqual(['#', 'Question', 'Expected', 'Given', 'Correct', 'Scored by', 'Tools', 'Errors', 'Trajectory']);
      const rows = [...el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr')].map((tr) => [...tr.querySelectorAll('td')].slice(0, 6).map((td) => td.textContent?.trim()));
      expect(rows).toEqual([
        ['2', 'Name a primary colour.', 'red', 'red', 'yes', 'exact text'],
        ['3', 'What is 2+3?', '5', '5', 'yes', 'same number'],
      ]);
      // Its conversations say which run made them (the chat lists them apart from the user's questions).
      const convs = await listConversations(dbName);
      expect(convs.map((c) => c.title).sort()).toEqual(['mini #2 (a2)', 'mini #3 (a3)']);
      expect(convs.every((c) => (c.settings?.experiment as { id?: string } | undefined)?.id === run.id)).toBe(true);
    } finally {
      el.remove();
    }
  });
});

describe('<agentflow-experiments-panel> and failing storage', () => {
  it('says once that the storage would not open, with the database and the browser’s reason', async () => {
    const real = IDBFactory.prototype.open;
    IDBFactory.prototype.open = function () {
      throw new DOMException('The user denied permission to access the database.', 'SecurityError');
    };
    const el = document.createElement('agentflow-experiments-panel') as AgentflowExperimentsPanel;
    el.dbName = `experiments-nodb-${Math.random()}`;
    try {
      document.body.append(el);
      await expect.poll(() => el.error).toMatch(/^Could not open this browser's storage \(IndexedDB database 'experiments-nodb-.*'\): The user denied permission/);
      expect(el.error!.match(/Could not open this browser's storage/g)).toHaveLength(1);
    } finally {
      IDBFactory.prototype.open = real;
      el.remove();
    }
  });
});
