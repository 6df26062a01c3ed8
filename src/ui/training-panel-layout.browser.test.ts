// The Training tab's words and layout, read from the page: plain labels first with the technical term after,
// the learning knobs under an Advanced fold, the agent-rollout part folded away in toy mode (so on a phone the
// toy's Start button is near the top), information notes in the text's own colour, and at 390 px no text
// clipped or squeezed to a word per line (with a stored run and its adapters shown).
import { afterEach, describe, expect, it } from 'vitest';
import { page } from 'vitest/browser';
import { ScriptedEngine } from '../agent/scripted-engine';
import type { PolicyTrainer } from '../trainer/training-host';
import { createToyDriver } from '../controllers/training/training-driver';
import type { AgentflowTrainingPanel } from './training-panel';
import './training-panel';

/** Real toy steps on a loaded 2-core machine can take seconds: polls wait this long for a run's state. */
const SLOW = { timeout: 60_000 };

async function mount(dbName: string): Promise<AgentflowTrainingPanel> {
  const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
  p.dbName = dbName;
  p.createDriver = (s, db) => createToyDriver(s, db);
  document.body.append(p);
  await p.updateComplete;
  return p;
}

const words = (e: Element) => (e.textContent ?? '').trim().split(/\s+/).filter(Boolean).length;
const startButton = (p: AgentflowTrainingPanel) => [...p.shadowRoot!.querySelectorAll('button')].find((b) => /start training/i.test(b.textContent ?? ''))!;

/** Text boxes in the panel and its adapters list that are squeezed to about a word per line, or reach past the screen's edge. */
function cramped(p: AgentflowTrainingPanel): string[] {
  const roots = [p.shadowRoot!, p.shadowRoot!.querySelector('agentflow-training-adapters')!.shadowRoot!];
  const bad: string[] = [];
  const width = document.documentElement.clientWidth;
  for (const root of roots) {
    for (const e of root.querySelectorAll<HTMLElement>('p, label, li, summary, legend, span[role="status"], small, td, th, button, h3')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) continue;
      const cs = getComputedStyle(e);
      const line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.25;
      const lines = Math.round(r.height / line);
      const n = words(e);
      const label = `${e.tagName.toLowerCase()} “${(e.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 60)}”`;
      // A box's own text only: a label holding an input is taller than its words.
      if (n >= 4 && n / lines < 1.6 && !e.querySelector('input, select, button, table')) bad.push(`${label}: ${n} words on ${lines} lines`);
      if (r.right > width + 1 && !e.closest('.table-scroll')) bad.push(`${label}: ends at ${Math.round(r.right)} px of ${width}`);
    }
  }
  return bad;
}

afterEach(async () => {
  await page.viewport(414, 896);
  document.body.replaceChildren();
});

describe('Training tab words and layout', () => {
  it('in toy mode keeps the knobs under Advanced and the agent part folded, with Start near the top of a phone screen', async () => {
    await page.viewport(390, 800);
    const p = await mount(`layout-toy-${Math.random()}`);
    const advanced = p.shadowRoot!.querySelector<HTMLDetailsElement>('details[data-testid="advanced"]')!;
    expect(advanced.open).toBe(false);
    expect(['#group', '#lr', '#rank', '.targets'].map((s) => !!advanced.querySelector(s))).toEqual([true, true, true, true]);
    const agent = p.shadowRoot!.querySelector<HTMLDetailsElement>('details[data-testid="agent-setup"]')!;
    expect(agent.open).toBe(false);
    expect(agent.querySelector('summary')!.textContent).toBe('Train the loaded planner on a benchmark instead');
    // No agent budgets in toy mode.
    expect(p.shadowRoot!.querySelector('#micro-tokens')).toBeNull();
    const top = startButton(p).getBoundingClientRect().top - p.getBoundingClientRect().top;
    expect(top).toBeLessThan(400);
    // The folds come before nothing the toy needs: Start sits above the agent part.
    expect(agent.getBoundingClientRect().top).toBeGreaterThan(startButton(p).getBoundingClientRect().top);
  });

  it('labels fields in plain words first and the technical term second, in agent mode too', async () => {
    const p = await mount(`layout-agent-${Math.random()}`);
    const trainer: PolicyTrainer = { trainStart: () => Promise.reject(new Error('unused')), trainStep: () => Promise.reject(new Error('unused')), trainCheckpoint: () => Promise.reject(new Error('unused')), trainStop: () => undefined };
    p.engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    p.trainer = trainer;
    p.importBenchmarkText(JSON.stringify([{ pid: 'a', query: 'What is 1+1?', answer: '2' }]), 'tiny.json');
    await p.updateComplete;
    const labelOf = (id: string) => (p.shadowRoot!.querySelector(`#${id}`)!.closest('label')!.firstChild!.textContent ?? '').trim();
    expect(['group', 'lr', 'rank', 'max-turns', 'planner-tokens', 'queries', 'micro-tokens', 'extra-rollouts', 'max-update-kl', 'rollout-concurrency'].map(labelOf)).toEqual([
      'Tries per question (group size)',
      'Step size of each update (learning rate)',
      'Adapter size (LoRA rank)',
      'Turns per answer (max turns)',
      'Planner reply length (planner tokens)',
      'Questions per step (queries per step)',
      'Tokens per update batch (micro-batch tokens)',
      'More tries when all fail (extra rollouts)',
      'Largest change per update (max update KL)',
      'Tries run together (rollouts at once)',
    ]);
    // The agent part is open in agent mode, before Start; its budgets are under Advanced.
    expect(p.shadowRoot!.querySelector('fieldset[data-testid="agent-setup"]')).not.toBeNull();
    expect(p.shadowRoot!.querySelector('#micro-tokens')!.closest('details[data-testid="advanced"]')).not.toBeNull();
  });

  it('at 390 px shows a stored run, its notes and its adapters with no text clipped or a word per line, notes in the text’s colour', async () => {
    const dbName = `layout-phone-${Math.random()}`;
    const d = await createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 2, steps: 3, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, dbName);
    await d.run((pt) => pt.step === 2 && d.pause());
    d.dispose();
    await page.viewport(390, 800);
    const p = await mount(dbName);
    await expect.poll(() => p.shadowRoot!.querySelector('[data-testid="training-status"]')?.textContent ?? '', SLOW).toMatch(/^Paused at step 2 of 3/);
    await expect.poll(() => p.shadowRoot!.querySelector('agentflow-training-adapters')!.shadowRoot!.querySelectorAll('tbody tr').length, SLOW).toBeGreaterThan(0);
    // Every fold open, so their contents are laid out and checked too.
    for (const root of [p.shadowRoot!, p.shadowRoot!.querySelector('agentflow-training-adapters')!.shadowRoot!]) for (const det of root.querySelectorAll('details')) det.open = true;
    p.notes = ['Step 3 was cut short by Pause: the 2 rollouts it had played were dropped, and Resume plays step 3 again from its start.'];
    await p.updateComplete;
    await expect.poll(() => cramped(p), SLOW).toEqual([]);
    const note = p.shadowRoot!.querySelector('[data-testid="training-note"]')!;
    expect(getComputedStyle(note).color).toBe(getComputedStyle(p).color);

    // Agent mode: the benchmark part and the rollout budgets, every fold open.
    p.engines = { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') };
    p.trainer = { trainStart: () => Promise.reject(new Error('unused')), trainStep: () => Promise.reject(new Error('unused')), trainCheckpoint: () => Promise.reject(new Error('unused')), trainStop: () => undefined };
    p.importBenchmarkText(JSON.stringify([{ pid: 'a', query: 'What is 1+1?', answer: '2' }]), 'tiny.json');
    await p.updateComplete;
    for (const det of p.shadowRoot!.querySelectorAll('details')) det.open = true;
    expect(p.shadowRoot!.querySelector('#micro-tokens')).not.toBeNull();
    await expect.poll(() => cramped(p)).toEqual([]);
    // A held-out file chosen: its summary, the interval field and the button to drop it; then a refused one's message.
    p.heldOut.importText(JSON.stringify([{ question: 'What is 7+7?', answer: '14' }]), 'held-out-questions.json');
    await p.updateComplete;
    expect(p.shadowRoot!.querySelector('#held-out-every')).not.toBeNull();
    await expect.poll(() => cramped(p)).toEqual([]);
    p.heldOut.importText(JSON.stringify([{ question: 'What is 1+1?', answer: '2' }]), 'held-out-questions.json');
    await p.updateComplete;
    expect(p.shadowRoot!.querySelector('[data-testid="training-held-out-problem"]')).not.toBeNull();
    await expect.poll(() => cramped(p)).toEqual([]);
  });
});
