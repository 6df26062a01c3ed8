// The Training tab's tool-choice task (no download), chosen and started from the form like a person would:
// a real run in its worker (the tiny planner through the real agent loop, float64 on the CPU, stored in
// IndexedDB), the tab showing its step count, its training reward and its held-out accuracy (step 0: the
// untrained planner). Only the task's question sets are shrunk (1 per kind), so the run fits a test.
import { describe, expect, it } from 'vitest';
import { WorkerToolTaskDriver } from './tool-task-worker';
import type { AgentflowTrainingPanel } from './training-panel';
import './training-panel';

/** A step of the float64 planner on a loaded 2-core machine takes seconds; evaluations more. */
const SLOW = { timeout: 120_000, interval: 250 };

const q = <T extends Element>(p: AgentflowTrainingPanel, sel: string) => p.shadowRoot!.querySelector(sel) as T | null;
const text = (e: Element | null | undefined) => (e?.textContent ?? '').replace(/\s+/g, ' ').trim();
const status = (p: AgentflowTrainingPanel) => text(q(p, '[data-testid="training-status"]'));
const rewardChart = (p: AgentflowTrainingPanel) => q(p, '[data-testid="training-charts"] agentflow-line-chart')?.shadowRoot?.querySelector('.plot')?.getAttribute('aria-label') ?? '';
const set = (p: AgentflowTrainingPanel, id: string, value: string) => {
  const el = q<HTMLInputElement | HTMLSelectElement>(p, `#${id}`)!;
  el.value = value;
  el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? 'change' : 'input', { bubbles: true }));
};

describe('Training tab: the tool-choice task', () => {
  it('is a mode of the form with the CLI’s defaults, runs in a worker from Start, and shows its steps, reward and held-out accuracy', async () => {
    const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
    p.dbName = `tool-task-${Math.random()}`;
    const started: string[] = [];
    p.createToolTaskDriver = async (s, db) => {
      const d = await WorkerToolTaskDriver.create({ ...s, toolTask: { ...s.toolTask, task: { seed: 1, trainPerKind: 1, heldOutPerKind: 1 } } }, db);
      started.push(d.label);
      return d;
    };
    document.body.append(p);
    try {
      await p.updateComplete;
      const options = [...p.shadowRoot!.querySelectorAll<HTMLOptionElement>('#dataset option')].map((o) => o.textContent!.trim());
      expect(options).toEqual(['Toy task (two-turn tool use, tiny planner)', 'Tool-choice task (no download)', 'Imported benchmark (agent rollouts)']);
      set(p, 'dataset', 'tools');
      await p.updateComplete;
      // `cli train --task tools`'s defaults.
      const value = (id: string) => q<HTMLInputElement>(p, `#${id}`)!.value;
      expect(['steps', 'group', 'lr', 'rank', 'queries', 'eval-every', 'extra-rollouts'].map(value)).toEqual(['60', '8', '0.02', '4', '4', '10', '8']);
      expect(text(q(p, '[data-testid="tool-task-about"]'))).toMatch(/nothing downloaded/);

      set(p, 'steps', '1');
      set(p, 'group', '2');
      set(p, 'queries', '1');
      set(p, 'eval-every', '1');
      set(p, 'extra-rollouts', '0');
      const start = [...p.shadowRoot!.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Tool-choice task: start training')!;
      start.click();
      await expect.poll(() => status(p), SLOW).toMatch(/^Done: step 1 of 1, reward \d\.\d\d$/);
      expect(started).toEqual(['Tool-choice task (tiny planner, CPU), in a worker']);
      // Held-out accuracy at step 0 (before training) and the last step, beside the training reward.
      await expect.poll(() => rewardChart(p), SLOW).toMatch(/^Reward in training and accuracy on held-out items: reward \d(\.\d+)?, rolling \d(\.\d+)?, held-out accuracy \d(\.\d+)?$/);
      expect(p.evals.map((e) => [e.step, e.total])).toEqual([
        [0, 4],
        [1, 4],
      ]);
      expect(p.evals.every((e) => !e.error && e.accuracy >= 0 && e.accuracy <= 1)).toBe(true);
      expect(text(q(p, '[data-testid="training-runs"]'))).toMatch(/Tool-choice task.*step 1 of 1 — done/);
    } finally {
      p.remove();
    }
  }, 180_000);
});
