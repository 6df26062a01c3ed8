// The Training tab's state after reloads, pauses and swaps, read from what the page shows (Chromium, real
// IndexedDB, toy runs trained for real in this thread): an interrupted run after a reload, its settings in
// the form, one Resume, a list entry that follows the live run, restart notes gone once the run is done, the
// step a swap cut short, and adapters grouped under their run with Activate only where the base fits.
import { describe, expect, it } from 'vitest';
import type { ChatEngine, GenerationResult } from '../engine/chat-engine';
import { chatStream } from '../engine/chat-stream';
import { openAgentDb } from '../store/db';
import { resolveGrpoConfig } from '../trainer/grpo-config';
import type { PolicyTrainer } from '../trainer/training-host';
import { IdbRunStore } from '../trainer/run/run-store-idb';
import { ToyTask, toyModel } from '../trainer/toy-task';
import { createToyDriver, resumeToyDriver } from '../controllers/training/training-driver';
import type { AgentflowTrainingPanel } from './training-panel';
import './training-panel';

/** Real toy steps on a loaded 2-core machine can take seconds: polls wait this long for a run's state. */
const SLOW = { timeout: 60_000 };

async function mount(dbName: string): Promise<AgentflowTrainingPanel> {
  const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
  p.dbName = dbName;
  p.createDriver = (s, db) => createToyDriver(s, db);
  p.resumeToyDriver = (id, db) => resumeToyDriver(id, db);
  document.body.append(p);
  await p.updateComplete;
  return p;
}

const q = <T extends Element>(p: AgentflowTrainingPanel, sel: string) => p.shadowRoot!.querySelector(sel) as T | null;
const text = (e: Element | null | undefined) => (e?.textContent ?? '').replace(/\s+/g, ' ').trim();
const status = (p: AgentflowTrainingPanel) => text(q(p, '[data-testid="training-status"]'));
const runItem = (p: AgentflowTrainingPanel, id: string) => text(q(p, `[data-testid="training-runs"] li[data-run="${id}"]`));
const buttonsNamed = (p: AgentflowTrainingPanel, label: string) => [...p.shadowRoot!.querySelectorAll('button')].filter((b) => b.textContent?.trim() === label);
const chartPoints = (p: AgentflowTrainingPanel) => [...p.shadowRoot!.querySelectorAll('[data-testid="training-charts"] agentflow-line-chart')].map((c) => c.shadowRoot?.querySelector<HTMLElement>('.plot')?.dataset.points ?? '');
const adaptersRoot = (p: AgentflowTrainingPanel) => p.shadowRoot!.querySelector('agentflow-training-adapters')!.shadowRoot!;

/** A real toy run of `steps` steps (groups of 2), paused after `pauseAt`; returns its id. */
async function pausedToyRun(dbName: string, steps: number, pauseAt: number): Promise<string> {
  const d = await createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 2, steps, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, dbName);
  await d.run((pt) => pt.step === pauseAt && d.pause());
  d.dispose();
  return d.runId;
}

describe('Training tab after a reload', () => {
  it('shows an interrupted run as interrupted with its charts and settings, offers one Resume, follows it live and drops its restart note when done', async () => {
    const dbName = `state-reload-${Math.random()}`;
    const id = await pausedToyRun(dbName, 6, 3);
    // What a reload mid-run leaves: the record says running, and a step ran after the last checkpoint (3).
    const store = new IdbRunStore(dbName);
    const rec = (await store.load(id))!;
    await store.save({ ...rec, status: 'running', history: [...rec.history, { ...rec.history[2], step: 4 }] });

    const p = await mount(dbName);
    try {
      await expect.poll(() => status(p), SLOW).toMatch(/^Interrupted at step 4 of 6, reward \d\.\d\d \(the page closed while it ran\) — Resume continues it from its last checkpoint\.$/);
      expect(runItem(p, id)).toMatch(/: step 4 of 6 — interrupted \(shown above\)$/);
      await expect.poll(() => chartPoints(p)[0], SLOW).toBe('4,4');
      // The form shows the shown run's settings, not the defaults.
      expect([q<HTMLInputElement>(p, '#steps')!.value, q<HTMLInputElement>(p, '#group')!.value, q<HTMLInputElement>(p, '#lr')!.value, q<HTMLInputElement>(p, '#rank')!.value]).toEqual(['6', '2', '0.02', '2']);
      expect([...p.shadowRoot!.querySelectorAll<HTMLInputElement>('.targets input')].filter((i) => i.checked).map((i) => i.value)).toEqual(['q', 'v']);
      expect(buttonsNamed(p, 'Resume')).toHaveLength(1);

      // Resumed, held before the last step's checkpoint: the list entry follows the live run.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      p.resumeToyDriver = async (runId, db) => {
        const d = await resumeToyDriver(runId, db);
        const run = d.run.bind(d);
        d.run = (onStep, events) => run(onStep, { ...events, onCheckpoint: (c) => (c.step === 6 ? gate : undefined) });
        return d;
      };
      buttonsNamed(p, 'Resume')[0].click();
      await expect.poll(() => text(q(p, '[data-testid="training-note"]')), SLOW).toBe('step 4–4 ran after the last checkpoint and will run again');
      await expect.poll(() => runItem(p, id), SLOW).toMatch(/: step 5 of 6 — running \(shown above\)$/);
      expect(status(p)).toMatch(/^Running: step 5 of 6/);
      release();
      await expect.poll(() => status(p), SLOW).toMatch(/^Done: step 6 of 6, reward \d\.\d\d$/);
      // The stored record (its result) is read again once the run has ended.
      await expect.poll(() => runItem(p, id), SLOW).toMatch(/: step 6 of 6 — done, result step \d \(shown above\)$/);
      expect(q(p, '[data-testid="training-note"]')).toBeNull();
      expect(buttonsNamed(p, 'Resume')).toHaveLength(1);
      expect(buttonsNamed(p, 'Resume')[0].disabled).toBe(true);
    } finally {
      p.remove();
    }
  });

  it('offers a paused run that is not shown its own Resume in the list, and the shown one only the tab’s', async () => {
    const dbName = `state-two-${Math.random()}`;
    const older = await pausedToyRun(dbName, 4, 1);
    await new Promise((r) => setTimeout(r, 5)); // a later update time
    const newer = await pausedToyRun(dbName, 4, 2);
    const p = await mount(dbName);
    try {
      await expect.poll(() => status(p), SLOW).toMatch(/^Paused at step 2 of 4/);
      expect(runItem(p, newer)).toMatch(/— paused \(shown above\)$/);
      expect(runItem(p, older)).toMatch(/: step 1 of 4 — paused Show Resume$/);
      expect(buttonsNamed(p, 'Resume')).toHaveLength(2);
    } finally {
      p.remove();
    }
  });
});

/** An engine whose calls wait until aborted (a planner mid-rollout). */
function heldEngine(id: string, calls: { n: number }): ChatEngine {
  return {
    id,
    stream: (_m, o = {}) =>
      chatStream(
        () =>
          new Promise<GenerationResult>((_resolve, reject) => {
            calls.n++;
            o.signal?.addEventListener('abort', () => reject(o.signal!.reason ?? new DOMException('Aborted', 'AbortError')), { once: true });
          }),
      ),
  };
}

describe('Training tab when a model switch pauses a run', () => {
  it('says which step the switch cut short and that its rollouts were dropped, in the tab and in what the app is told', async () => {
    const p = await mount(`state-swap-${Math.random()}`);
    const calls = { n: 0 };
    const trainer: PolicyTrainer = {
      trainStart: async (o) => ({ runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: !!o.resume, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] }),
      trainStep: () => Promise.reject(new Error('no step finishes in this test')),
      trainCheckpoint: async () => ({ step: 0, adapterId: 'none' }),
      trainStop: () => undefined,
    };
    p.engines = { planner: heldEngine('planner:held', calls), shared: heldEngine('shared:held', calls) };
    p.trainer = trainer;
    try {
      p.importBenchmarkText(JSON.stringify([{ pid: 'a', query: 'What is 1+1?', answer: '2' }]), 'tiny.json');
      await p.updateComplete;
      q<HTMLInputElement>(p, '#group')!.value = '2';
      q<HTMLInputElement>(p, '#steps')!.value = '3';
      void p.start();
      await expect.poll(() => calls.n, SLOW).toBeGreaterThan(0);
      const use = p.engineUse()!;
      await use.stop();
      expect(use.kept).toMatch(/^it is paused with its checkpoints kept; resume it in Training\. Step 1 was cut short by the model switch: (the \d+ rollouts? it had played|its rollouts so far) were dropped, and Resume plays step 1 again from its start\.$/);
      await p.updateComplete;
      expect(text(q(p, '[data-testid="training-note"]'))).toMatch(/^Step 1 was cut short by the model switch: .* were dropped, and Resume plays step 1 again from its start\.$/);
      expect(status(p)).toMatch(/^Paused at step 0 of 3$/);
      expect(buttonsNamed(p, 'Resume')).toHaveLength(1);
    } finally {
      p.remove();
    }
  });
});

describe('Training tab adapters', () => {
  it('groups checkpoints under their run with the result marked, and offers Activate only for adapters that fit the loaded planner', async () => {
    const dbName = `state-adapters-${Math.random()}`;
    const d = await createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 2, steps: 3, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, dbName);
    await d.run(() => undefined);
    const db = await openAgentDb(dbName);
    const toyCkpt = (await db.getAll('adapters'))[0];
    // A planner adapter (the toy model's shapes, another base name), imported: no run.
    const { trainingRunId: _, ...rest } = toyCkpt;
    await db.put('adapters', { ...rest, id: 'planner-adapter', name: 'planner adapter', baseModel: 'qwen2-tiny', createdAt: toyCkpt.createdAt + 10 });
    const base = toyModel(new ToyTask(), { seed: 1 }).config;
    const p = await mount(dbName);
    try {
      const root = () => adaptersRoot(p);
      await expect.poll(() => root().querySelectorAll('[data-testid="adapter-group"]').length, SLOW).toBe(2);
      const [runGroup, imported] = [...root().querySelectorAll<HTMLDetailsElement>('[data-testid="adapter-group"]')];
      const ckpts = (await db.getAll('adapters')).filter((a) => a.trainingRunId === d.runId);
      expect(text(runGroup.querySelector('summary'))).toBe(`Toy task (tiny planner, CPU), run ${d.runId}: ${ckpts.length} adapter${ckpts.length === 1 ? '' : 's'}, result step ${d.result!.step}`);
      expect(text(imported.querySelector('summary'))).toBe('Imported: 1 adapter');
      expect(runGroup.open).toBe(true);
      const marked = [...runGroup.querySelectorAll('tbody tr')].filter((r) => r.querySelector('[data-testid="result-mark"]'));
      expect(marked.map((r) => r.getAttribute('data-adapter'))).toEqual([d.result!.adapterId]);
      // Toy checkpoints never go on a chat planner: no Activate, and why.
      expect(runGroup.querySelectorAll('button[aria-pressed]')).toHaveLength(0);
      expect(text(runGroup.querySelector('[data-testid="activate-refusal"]'))).toBe('Not for chat: made for the toy task’s tiny planner: it trains and charts, but no chat model can use it.');
      expect([...imported.querySelectorAll('button[aria-pressed]')].map((b) => b.getAttribute('aria-label'))).toEqual(['Activate adapter planner adapter']);

      // A planner loaded whose shapes it fits: Activate; one it does not fit: why not.
      const withPlanner = (config: typeof base): PolicyTrainer & { info: () => Promise<unknown> } => ({
        trainStart: () => Promise.reject(new Error('unused')),
        trainStep: () => Promise.reject(new Error('unused')),
        trainCheckpoint: () => Promise.reject(new Error('unused')),
        trainStop: () => undefined,
        info: async () => ({ id: 'qwen2-tiny', config }),
      });
      p.trainer = withPlanner(base);
      await expect.poll(() => p.planner?.id, SLOW).toBe('qwen2-tiny');
      await p.updateComplete;
      expect(imported.querySelectorAll('button[aria-pressed]')).toHaveLength(1);
      p.trainer = withPlanner({ ...base, numLayers: 1 });
      await expect.poll(() => text(root().querySelectorAll('[data-testid="adapter-group"]')[1].querySelector('[data-testid="activate-refusal"]')), SLOW).toMatch(
        /^Not for chat: made for another base model than qwen2-tiny: it has layer 1; the loaded planner has 1 layers\.$/,
      );
      expect(root().querySelectorAll('[data-testid="adapter-group"]')[1].querySelectorAll('button[aria-pressed]')).toHaveLength(0);
    } finally {
      p.remove();
    }
  });
});

describe('Training tab held-out accuracy', () => {
  it('charts a run’s held-out evaluations beside the training reward, on the same steps (step 0: before training)', async () => {
    const dbName = `state-evals-${Math.random()}`;
    const id = await pausedToyRun(dbName, 4, 3);
    const store = new IdbRunStore(dbName);
    const run = (await store.load(id))!;
    await store.appendEval(run, { step: 0, accuracy: 0.25, correct: 1, total: 4, seconds: 1, adapter: 'start' });
    await store.appendEval(run, { step: 2, accuracy: 0.5, correct: 2, total: 4, seconds: 1, adapter: 'ckpt-2' });
    await store.appendEval(run, { step: 3, accuracy: 0, correct: 0, total: 0, seconds: 1, adapter: 'ckpt-3', error: 'the planner went away' });
    const p = await mount(dbName);
    try {
      const reward = () => p.shadowRoot!.querySelector('[data-testid="training-charts"] agentflow-line-chart')!.shadowRoot;
      await expect.poll(() => reward()?.querySelector('figcaption')?.textContent?.trim(), SLOW).toBe('Reward in training and accuracy on held-out items');
      // Steps 0-3: reward and its rolling mean at steps 1-3, accuracy at steps 0 and 2 (the failed evaluation is left out).
      await expect.poll(() => reward()?.querySelector<HTMLElement>('.plot')?.dataset.points, SLOW).toBe('3,3,2');
      expect(reward()!.querySelector('.u-legend')!.textContent).toContain('held-out accuracy');
      // The other charts keep their own steps (the loss; the KL, not measured at the toy's beta 0, has none).
      expect(chartPoints(p).slice(1, 3)).toEqual(['3', '0']);
    } finally {
      p.remove();
    }
  });
});
