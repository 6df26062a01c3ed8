// Experiments you can tell apart and believe (issue 28 item 3), in Chromium, reading what the tab shows:
// two runs of one benchmark in the same minute get different names (table, chart, Compare headings), the
// Runs table marks A and B and shows the turn budget, a run is renamed in place from the keyboard, the
// scripted demo's right answers score right with the rule that scored them, an imported benchmark is offered
// again after a reload and runs, and at 390 px a run's name is not squeezed to a word per line.
import { afterEach, describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';
import type { AgentEngines } from '../agent/loop';
import { scriptedDemoEngines } from '../controllers/engines/demo-engines';
import './experiments-panel';
import type { AgentflowExperimentsPanel } from './experiments-panel';

const reply: ProbeReplyFn = (module) =>
  module === 'planner' ? JSON.stringify({ justification: 'j', context: '', sub_goal: 'Echo it', tool_name: 'echo' })
  : module === 'executor' ? '{"text": "x"}'
  : module === 'generator' ? 'From the tool: 5'
  : 'Echo it.';

const echo: Tool = {
  card: { name: 'echo', description: 'Echoes text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: String(args.text) };
  },
};

const reverse: Tool = {
  card: { name: 'reverse', description: 'Reverses text.', input: { type: 'object', properties: { text: { type: 'string', description: 'text' } }, required: ['text'] }, output: 'the text reversed', limitations: [], examples: [], usesNetwork: false },
  async run(args) {
    return { ok: true, output: [...String(args.text)].reverse().join('') };
  },
};

const FILE = ['{"pid": "a1", "query": "What is 2+3?", "answer": 5}', '{"pid": "a2", "query": "What is 1+4?", "answer": "5"}'].join('\n');

const squash = (s: string | null | undefined) => (s ?? '').replace(/\s+/g, ' ').trim();
const text = (el: AgentflowExperimentsPanel, selector: string) => squash(el.renderRoot.querySelector(selector)?.textContent);
const texts = (el: AgentflowExperimentsPanel, selector: string) => [...el.renderRoot.querySelectorAll(selector)].map((n) => squash(n.textContent));
const button = (el: ParentNode & { querySelectorAll: Element['querySelectorAll'] }, label: string) => [...el.querySelectorAll('button')].find((b) => squash(b.textContent) === label)!;
const runRows = (el: AgentflowExperimentsPanel) => [...el.renderRoot.querySelectorAll<HTMLTableRowElement>('[data-testid="runs"] tbody tr')];

const mounted: HTMLElement[] = [];
afterEach(() => mounted.splice(0).forEach((e) => e.remove()));

function probeEngines(): AgentEngines {
  const e = new ProbeEngine(reply, 'planner:probe-model');
  return { planner: e, shared: e };
}

function mount(dbName: string, tools: Tool[], engines: AgentEngines = probeEngines()): AgentflowExperimentsPanel {
  const registry = new ToolRegistry();
  for (const t of tools) registry.register(t);
  const el = document.createElement('agentflow-experiments-panel') as AgentflowExperimentsPanel;
  el.dbName = dbName;
  el.registry = registry;
  el.engines = engines;
  document.body.append(el);
  mounted.push(el);
  return el;
}

/** Presses Run and waits until the run is listed as done (or interrupted) and no progress shows. */
async function runOnce(el: AgentflowExperimentsPanel, runsBefore: number): Promise<void> {
  await expect.poll(() => !!el.renderRoot.querySelector('#turns')).toBe(true);
  (el.renderRoot.querySelector('#turns') as HTMLInputElement).value = '2';
  button(el.renderRoot as unknown as HTMLElement, 'Run').click();
  await expect.poll(() => runRows(el).length, { timeout: 15_000 }).toBe(runsBefore + 1);
  await expect.poll(() => el.renderRoot.querySelector('[data-testid="experiment-progress"]'), { timeout: 15_000 }).toBeNull();
  await expect.poll(() => texts(el, '[data-testid="runs"] tbody tr td:nth-child(2)').every((s) => s === 'done')).toBe(true);
}

describe('<agentflow-experiments-panel> runs told apart', () => {
  it('names two runs of one benchmark apart, shows the turn budget, marks A and B, and renames a run from the keyboard', async () => {
    const el = mount(`exp-names-${Math.random()}`, [echo]);
    el.importText(FILE, 'mini.jsonl');
    await runOnce(el, 0);
    await runOnce(el, 1);
    const names = texts(el, '[data-testid="runs"] tbody td .name');
    expect(names).toHaveLength(2);
    expect(names[0]).toMatch(/^probe-model · mini × 2 · 2 turns · \d{4}-\d\d-\d\d \d\d:\d\d/);
    expect(new Set(names).size).toBe(2);
    // Made in the same minute, the newer is "(2)" (a minute boundary between them is the only other way apart).
    const [newer, older] = names;
    if (newer.slice(0, -4) === older) expect(newer).toBe(`${older} (2)`);
    expect(texts(el, '[data-testid="runs"] thead th')).toEqual(['Run', 'Status', 'Turns', 'Accuracy', 'Tool calls', 'Actions']);
    expect(texts(el, '[data-testid="runs"] tbody td:nth-child(3)')).toEqual(['2', '2']);
    // The chart's bars are labelled apart too, by what tells the names apart (the time, and the "(2)").
    const bars = [...el.renderRoot.querySelectorAll('section[aria-labelledby="runs-h"] .charts svg text title')].map((n) => squash(n.textContent));
    expect(bars).toHaveLength(2);
    expect(new Set(bars).size).toBe(2);
    expect(bars.every((b) => b.length <= 18)).toBe(true);

    // Open the older run (A) and compare the newer with it (B): the table marks them; the headings differ.
    button(runRows(el)[1], 'Results').click();
    await expect.poll(() => texts(el, '[data-testid="run-mark"]')).toEqual(['A']);
    button(runRows(el)[0], 'Compare').click();
    await expect.poll(() => runRows(el).map((tr) => text(el, `tr[data-run="${tr.dataset.run}"] [data-testid="run-mark"]`))).toEqual(['B', 'A']);
    await expect.poll(() => texts(el, '[data-testid="run-summary"] h4')).toEqual([`A: ${older}`, `B: ${newer}`]);

    // Rename the newer run: Rename, type, Enter; the focus comes back to its Rename button.
    const renameB = runRows(el)[0].querySelector<HTMLButtonElement>('button[data-rename]')!;
    renameB.focus();
    renameB.click();
    const input = await expect.poll(() => el.renderRoot.querySelector<HTMLInputElement>('[data-testid="rename-input"]')).toBeTruthy().then(() => el.renderRoot.querySelector<HTMLInputElement>('[data-testid="rename-input"]')!);
    expect((el.renderRoot as ShadowRoot).activeElement).toBe(input);
    expect(input.value).toBe(newer);
    // A name another run has is refused, and the field stays open saying why.
    input.value = older;
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    await expect.poll(() => text(el, '#rename-error')).toBe(`Another run is already named “${older}”.`);
    input.value = 'trained adapter, 2 turns';
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    await expect.poll(() => texts(el, '[data-testid="runs"] tbody td .name')).toEqual(['trained adapter, 2 turns', older]);
    await expect.poll(() => ((el.renderRoot as ShadowRoot).activeElement as HTMLElement | null)?.getAttribute('aria-label')).toBe('Rename run trained adapter, 2 turns');
    await expect.poll(() => texts(el, '[data-testid="run-summary"] h4')).toEqual([`A: ${older}`, 'B: trained adapter, 2 turns']);
    // Escape leaves the name as it was.
    button(runRows(el)[1], 'Rename').click();
    await expect.poll(() => !!el.renderRoot.querySelector('[data-testid="rename-input"]')).toBe(true);
    const again = el.renderRoot.querySelector<HTMLInputElement>('[data-testid="rename-input"]')!;
    again.value = 'never saved';
    again.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    await expect.poll(() => texts(el, '[data-testid="runs"] tbody td .name')).toEqual(['trained adapter, 2 turns', older]);
  });

  it('scores an answer stated after a label as right and says which rule scored each item', async () => {
    const el = mount(`exp-scored-${Math.random()}`, [echo]);
    el.importText(FILE, 'mini.jsonl');
    await runOnce(el, 0);
    await expect.poll(() => el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr').length).toBe(2);
    const rows = [...el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr')].map((tr) => [...tr.querySelectorAll('td')].slice(3, 6).map((td) => squash(td.textContent)));
    expect(rows).toEqual([
      ['From the tool: 5', 'yes', 'stated answer “5”'],
      ['From the tool: 5', 'yes', 'stated answer “5”'],
    ]);
    expect(text(el, '[data-testid="runs"] tbody td:nth-child(4)')).toBe('2/2 (100%)');
  });

  it("scores the scripted demo's right answers as right", async () => {
    const el = mount(`exp-demo-${Math.random()}`, [reverse], scriptedDemoEngines());
    el.importText(['{"pid": "1", "query": "stressed", "answer": "desserts"}', '{"pid": "2", "query": "drawer", "answer": "Reward"}', '{"pid": "3", "query": "live", "answer": "devil"}'].join('\n'), 'reversals.jsonl');
    await runOnce(el, 0);
    await expect.poll(() => text(el, '[data-testid="runs"] tbody td:nth-child(4)')).toBe('2/3 (67%)');
    // The items table renders after the runs table's summary: wait for its rows too.
    const rows = () => [...el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr')].map((tr) => [...tr.querySelectorAll('td')].slice(2, 6).map((td) => squash(td.textContent)));
    await expect.poll(rows).toEqual([
      ['desserts', 'desserts', 'yes', 'exact text'],
      ['Reward', 'reward', 'yes', 'exact text'],
      ['devil', 'evil', 'no', 'exact text'],
    ]);
  });
});

describe('<agentflow-experiments-panel> imported benchmarks kept', () => {
  it('offers an imported benchmark again after a reload, and runs it', async () => {
    const dbName = `exp-kept-${Math.random()}`;
    const first = mount(dbName, [echo]);
    first.importText(FILE, 'mini.jsonl');
    first.importText('{"pid": "z", "query": "Other?", "answer": "x"}', 'other.jsonl');
    await expect.poll(() => texts(first, '[data-testid="stored-benchmarks"] option').length).toBe(2);
    first.remove();

    // A new element on the same storage, as after a reload: the newest import is chosen, the other offered.
    const el = mount(dbName, [echo]);
    await expect.poll(() => texts(el, '[data-testid="stored-benchmarks"] option').map((o) => o.replace(/ imported .*/, ''))).toEqual(['other: 1 item, exact,', 'mini: 2 items, exact,']);
    await expect.poll(() => text(el, '[data-testid="import-summary"]')).toBe('Imported 1 item from “other” (reward: exact).');
    const select = el.renderRoot.querySelector<HTMLSelectElement>('[data-testid="stored-benchmarks"]')!;
    select.value = select.options[1].value;
    select.dispatchEvent(new Event('change'));
    await expect.poll(() => text(el, '[data-testid="import-summary"]')).toBe('Imported 2 items from “mini” (reward: exact).');
    await runOnce(el, 0);
    expect(texts(el, '[data-testid="runs"] tbody td .name')[0]).toMatch(/^probe-model · mini × 2 · 2 turns · /);
    await expect.poll(() => el.renderRoot.querySelectorAll('[data-testid="items"] tbody tr').length).toBe(2);
  });
});

describe('<agentflow-experiments-panel> at 390 px', () => {
  it('keeps a run name readable: a few lines, not a word per line; the table scrolls in its box', async () => {
    const el = mount(`exp-narrow-${Math.random()}`, [echo]);
    el.style.display = 'block';
    el.style.width = '390px';
    el.importText(FILE, 'a-benchmark-with-a-long-name.jsonl');
    await runOnce(el, 0);
    const name = el.renderRoot.querySelector<HTMLElement>('[data-testid="runs"] tbody td .name')!;
    const range = document.createRange();
    range.selectNodeContents(name);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    const words = name.textContent!.trim().split(/\s+/).length;
    expect(words).toBeGreaterThan(10);
    expect(lines).toBeLessThanOrEqual(4);
    const box = el.renderRoot.querySelector<HTMLElement>('.table-scroll[aria-label="Runs"]')!;
    expect(box.getBoundingClientRect().width).toBeLessThanOrEqual(390);
    expect(box.scrollWidth).toBeGreaterThan(box.clientWidth);
  });
});
