// A run made by `cli eval` (results.jsonl + summary.json, in the file format it writes) imports into the
// Experiments tab as a run, and Compare puts it beside another imported run item by item.
import { afterEach, describe, expect, it } from 'vitest';
import './experiments-panel';
import type { AgentflowExperimentsPanel } from './experiments-panel';

const mounted: HTMLElement[] = [];
afterEach(() => mounted.splice(0).forEach((e) => e.remove()));

const line = (pid: string, correct: boolean, sample?: number) =>
  JSON.stringify({ pid, number: Number(pid), ...(sample !== undefined ? { sample } : {}), question: `q${pid}`, expected: 'a', given: correct ? 'a' : 'b', correct, turns: 1, tools: { python: 1 }, seconds: 0.5 });
const summary = (name: string, adapter: string | null) => JSON.stringify({ name, accuracy: 0, model: 'Qwen2.5-0.5B-Instruct', adapter, benchmark: 'bamboogle', rewardKind: 'exact', settings: { maxTurns: 3 } });

describe('<agentflow-experiments-panel> importing a cli eval run', () => {
  it('lists the run with its accuracy and compares it with another', async () => {
    const el = document.createElement('agentflow-experiments-panel') as AgentflowExperimentsPanel;
    el.dbName = `import-run-${Date.now()}`;
    document.body.append(el);
    mounted.push(el);
    await el.updateComplete;
    const base = await el.importRunFiles([{ name: 'results.jsonl', text: `${line('1', false)}\n${line('2', true)}\n` }, { name: 'summary.json', text: summary('base run', null) }]);
    expect(base?.summary).toMatchObject({ items: 2, correct: 1, accuracy: 0.5 });
    const tuned = await el.importRunFiles([{ name: 'out/summary.json', text: summary('tuned run', 'mine') }, { name: 'out/results.jsonl', text: [line('1', true, 0), line('1', false, 1), line('2', true, 0), line('2', true, 1)].join('\n') }]);
    expect(tuned?.summary).toMatchObject({ items: 4, correct: 3, accuracy: 0.75 });
    await el.updateComplete;
    const rows = () => [...el.renderRoot.querySelectorAll('[data-testid="runs"] tbody tr')].map((r) => r.textContent ?? '');
    await expect.poll(rows).toHaveLength(2);
    expect(rows().find((r) => r.includes('tuned run'))).toMatch(/3\/4 \(75%\)/);
    expect(rows().find((r) => r.includes('base run'))).toMatch(/1\/2 \(50%\)/);
    // Open the tuned run (A) and compare with the base run (B).
    const rowOf = (name: string) => [...el.renderRoot.querySelectorAll('[data-testid="runs"] tbody tr')].find((r) => r.textContent?.includes(name))!;
    const btn = (row: Element, label: string) => [...row.querySelectorAll('button')].find((b) => b.textContent?.trim() === label)!;
    btn(rowOf('tuned run'), 'Results').click();
    await el.updateComplete;
    await expect.poll(() => btn(rowOf('base run'), 'Compare').disabled).toBe(false);
    btn(rowOf('base run'), 'Compare').click();
    await expect.poll(() => el.renderRoot.textContent ?? '').toMatch(/Item by item: 1 right only in A, 1 right in both\./);
    // A file that is not a run is named and nothing is added.
    expect(await el.importRunFiles([{ name: 'bad.jsonl', text: '{"pid": "1"}\n' }])).toBeNull();
    await el.updateComplete;
    expect(el.renderRoot.textContent).toMatch(/Could not import the run from bad\.jsonl: line 1 of bad\.jsonl: "question" must be a string/);
    expect(rows()).toHaveLength(2);
  });
});
