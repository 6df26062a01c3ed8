// The Training tab's tool-choice task (no download), chosen and started from the form like a person would:
// a real run in its worker (the tiny planner through the real agent loop, float64 on the CPU, stored in
// IndexedDB), the tab showing its step count, its training reward and its held-out accuracy (step 0: the
// untrained planner). Only the task's question sets are shrunk (1 per kind), so the run fits a test.
import { afterEach, describe, expect, it } from 'vitest';
import { page } from 'vitest/browser';
import { createToolTaskDriver } from '../controllers/training/tool-task-driver';
import { WorkerToolTaskDriver } from '../controllers/training/tool-task-worker';
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

/** The task's question sets shrunk to 1 per kind: 4 training and 4 held-out questions. */
const TINY_TASK = { seed: 1, trainPerKind: 1, heldOutPerKind: 1 };

async function mount(dbName: string): Promise<AgentflowTrainingPanel> {
  const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
  p.dbName = dbName;
  document.body.append(p);
  await p.updateComplete;
  return p;
}

afterEach(async () => {
  await page.viewport(414, 896);
  document.body.replaceChildren();
});

describe('Training tab: the tool-choice task', () => {
  it('is a mode of the form with the CLI’s defaults, runs in a worker from Start, and shows its steps, reward and held-out accuracy', async () => {
    const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
    p.dbName = `tool-task-${Math.random()}`;
    const started: string[] = [];
    p.createToolTaskDriver = async (s, db) => {
      const d = await WorkerToolTaskDriver.create({ ...s, toolTask: { ...s.toolTask, task: TINY_TASK } }, db);
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
      expect(['steps', 'group', 'lr', 'rank', 'queries', 'eval-every', 'extra-rollouts', 'max-update-kl'].map(value)).toEqual(['120', '16', '0.01', '4', '8', '10', '8', '0']);
      expect(text(q(p, '[data-testid="tool-task-about"]'))).toMatch(/nothing downloaded/);

      set(p, 'steps', '1');
      set(p, 'group', '2');
      set(p, 'queries', '1');
      set(p, 'eval-every', '1');
      set(p, 'extra-rollouts', '0');
      const start = [...p.shadowRoot!.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Tool-choice task: start training')!;
      // A bound below 0 is refused before anything starts, naming the field.
      set(p, 'max-update-kl', '-1');
      start.click();
      await expect.poll(() => text(q(p, '[role="alert"]')), SLOW).toBe("Largest change per update (max update KL) must be a number, 0 or more (0: no limit), got '-1'");
      expect(started).toEqual([]);
      set(p, 'max-update-kl', '0');
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

  it('pauses a running run from the Pause button and resumes it in the same worker to the end', async () => {
    const STEPS = 16;
    const p = await mount(`tool-task-pause-${Math.random()}`);
    p.createToolTaskDriver = (s, db) => WorkerToolTaskDriver.create({ ...s, toolTask: { ...s.toolTask, task: TINY_TASK } }, db);
    set(p, 'dataset', 'tools');
    await p.updateComplete;
    for (const [id, v] of [['steps', String(STEPS)], ['group', '2'], ['queries', '1'], ['eval-every', '0'], ['extra-rollouts', '0']]) set(p, id, v);
    const button = (label: string) => [...p.shadowRoot!.querySelectorAll('button')].find((b) => b.textContent?.trim() === label)!;
    button('Tool-choice task: start training').click();
    await expect.poll(() => status(p), SLOW).toMatch(new RegExp(`^Running: step [1-9]\\d* of ${STEPS}`));
    button('Pause').click();
    // The step under way when Pause came is dropped (and played again on Resume), or had just finished. A step
    // of the tiny task takes well under a second, so the run is long enough for Pause to land before its end
    // even on a busy machine (with 3 steps, a CI run under load finished before the click reached the worker).
    await expect.poll(() => status(p), SLOW).toMatch(new RegExp(`^Paused at step \\d+ of ${STEPS}`));
    expect(p.points.length).toBeLessThan(STEPS);
    const label = p.label;
    button('Resume').click();
    await expect.poll(() => status(p), SLOW).toMatch(new RegExp(`^Done: step ${STEPS} of ${STEPS}, reward \\d\\.\\d\\d$`));
    expect(p.label).toBe(label);
    expect(p.points.map((pt) => pt.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
  }, 180_000);

  it('after a reload shows a paused run in its mode with its settings, and Resume continues it in a worker to the end', async () => {
    const dbName = `tool-task-resume-${Math.random()}`;
    const pausedRun = async (lr: number, maxUpdateKl: number) => {
      const d = await createToolTaskDriver(
        { dataset: 'tools', reward: 'exact', groupSize: 2, steps: 2, learningRate: lr, rank: 2, targets: ['q', 'v'], toolTask: { queriesPerStep: 1, evaluateEvery: 0, extraRollouts: 0, maxUpdateKl, task: TINY_TASK } },
        dbName,
      );
      await d.run((pt) => pt.step === 1 && d.pause());
      d.dispose();
      return d.runId;
    };
    const older = await pausedRun(0.01, 0.1);
    await new Promise((r) => setTimeout(r, 5)); // a later update time
    await pausedRun(0.03, 0.3);
    const p = await mount(dbName);
    await expect.poll(() => status(p), SLOW).toMatch(/^Paused at step 1 of 2/);
    expect(q<HTMLSelectElement>(p, '#dataset')!.value).toBe('tools');
    expect(['steps', 'group', 'lr', 'rank', 'queries', 'eval-every', 'max-update-kl'].map((id) => q<HTMLInputElement>(p, `#${id}`)!.value)).toEqual(['2', '2', '0.03', '2', '1', '0', '0.3']);
    // The older paused run has its own Resume in the list (no planner model loaded: the task needs none).
    expect(q(p, `[data-testid="training-runs"] button[aria-label="Resume run ${older}"]`)).not.toBeNull();
    const resume = [...p.shadowRoot!.querySelectorAll('button')].filter((b) => b.textContent?.trim() === 'Resume' && !b.hasAttribute('aria-label'));
    expect(resume).toHaveLength(1);
    expect(resume[0].disabled).toBe(false);
    resume[0].click();
    await expect.poll(() => status(p), SLOW).toMatch(/^Done: step 2 of 2, reward \d\.\d\d$/);
    expect(p.label).toMatch(/^Tool-choice task \(tiny planner, CPU\), in a worker, run /);
  }, 180_000);

  it('at 390 px keeps its settings and note readable, with Start near the top', async () => {
    await page.viewport(390, 800);
    const p = await mount(`tool-task-layout-${Math.random()}`);
    set(p, 'dataset', 'tools');
    await p.updateComplete;
    q<HTMLDetailsElement>(p, 'details[data-testid="advanced"]')!.open = true;
    await p.updateComplete;
    const width = document.documentElement.clientWidth;
    const bad: string[] = [];
    for (const e of p.shadowRoot!.querySelectorAll<HTMLElement>('p, label, summary, legend, small, button, select, input')) {
      const r = e.getBoundingClientRect();
      if (r.width && r.right > width + 1) bad.push(`${e.tagName.toLowerCase()} “${text(e).slice(0, 50)}” ends at ${Math.round(r.right)} px of ${width}`);
    }
    expect(bad).toEqual([]);
    q<HTMLDetailsElement>(p, 'details[data-testid="advanced"]')!.open = false;
    const start = [...p.shadowRoot!.querySelectorAll('button')].find((b) => b.textContent?.trim() === 'Tool-choice task: start training')!;
    expect(start.getBoundingClientRect().bottom).toBeLessThan(800);
  });
});
