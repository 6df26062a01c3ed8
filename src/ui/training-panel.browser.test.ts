// The Training panel in Chromium with real IndexedDB: the learning rate the form offers (and the trainer
// receives) per mode, and starting a run from a stored adapter in toy and real-planner mode. The real
// planner's worker is stood in for by a recorder of what the panel asks it; toy runs train for real.
import { describe, expect, it } from 'vitest';
import { page } from 'vitest/browser';
import { ScriptedEngine } from '../agent/scripted-engine';
import type { PolicyTrainer as PlannerTrainer } from '../trainer/training-host';
import { openAgentDb } from '../store/db';
import { IdbRunStore } from '../trainer/run/run-store-idb';
import { createToyDriver } from '../controllers/training/training-driver';
import { AgentflowTrainingPanel, DEFAULT_LEARNING_RATE } from './training-panel';

/** Real toy steps on a loaded 2-core machine can take seconds: polls wait this long for a run's state. */
const SLOW = { timeout: 60_000 };

type StartCall = Parameters<PlannerTrainer['trainStart']>[0];

/** Engines and a planner trainer that records trainStart and refuses it, so no rollout runs. */
function plannerWithRecorder(): { engines: { planner: ScriptedEngine; shared: ScriptedEngine }; trainer: PlannerTrainer; starts: StartCall[] } {
  const starts: StartCall[] = [];
  const client: PlannerTrainer = {
    async trainStart(o) {
      starts.push(structuredClone(o));
      throw new Error('recorded; no training in this test');
    },
    trainStep: () => Promise.reject(new Error('unused')),
    trainCheckpoint: () => Promise.reject(new Error('unused')),
    trainStop: () => undefined,
  };
  return { engines: { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') }, trainer: client, starts };
}

const BENCH = JSON.stringify([{ pid: 'a', query: 'What is 1+1?', answer: '2' }]);

async function mount(dbName: string): Promise<AgentflowTrainingPanel> {
  const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
  p.dbName = dbName;
  // Toy runs on this thread: the worker build is covered by the e2e tests.
  p.createDriver = (s, db) => createToyDriver(s, db);
  document.body.append(p);
  await p.refreshAdapters();
  await p.updateComplete;
  return p;
}

const q = <T extends Element>(p: AgentflowTrainingPanel, sel: string) => p.shadowRoot!.querySelector(sel) as T;
/** The shadow root of the panel's adapters list (<agentflow-training-adapters>). */
const adaptersRoot = (p: AgentflowTrainingPanel) => p.shadowRoot!.querySelector('agentflow-training-adapters')!.shadowRoot!;

async function choose(p: AgentflowTrainingPanel, sel: string, value: string): Promise<void> {
  const s = q<HTMLSelectElement>(p, sel);
  s.value = value;
  s.dispatchEvent(new Event('change'));
  await p.updateComplete;
}

async function type(p: AgentflowTrainingPanel, sel: string, value: string): Promise<void> {
  const i = q<HTMLInputElement>(p, sel);
  i.value = value;
  i.dispatchEvent(new Event('input'));
  await p.updateComplete;
}

const lr = (p: AgentflowTrainingPanel) => q<HTMLInputElement>(p, '#lr').value;
const startButton = (p: AgentflowTrainingPanel) => [...p.shadowRoot!.querySelectorAll('button')].find((b) => /start training/i.test(b.textContent ?? ''))!;

/** Real toy runs of `steps` steps (groups of 2) for the panel, each held at its checkpoints until release() is called. */
function holdToyRunAtCheckpoint(p: AgentflowTrainingPanel, steps: number): () => void {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  p.createDriver = async (s, db) => {
    const d = await createToyDriver({ ...s, steps, groupSize: 2 }, db);
    const run = d.run.bind(d);
    d.run = (onStep, events) => run(onStep, { ...events, onCheckpoint: () => gate });
    return d;
  };
  return release;
}

describe('Training panel learning rate', () => {
  it('offers the toy rate for the toy task and a LoRA-sized rate for the real planner, and keeps each mode’s edit to that mode', async () => {
    const p = await mount(`panel-lr-${Math.random()}`);
    expect(Number(lr(p))).toBe(DEFAULT_LEARNING_RATE.toy);
    const { engines, trainer, starts } = plannerWithRecorder();
    p.engines = engines;
    p.trainer = trainer;
    await p.updateComplete;
    expect(Number(lr(p))).toBe(DEFAULT_LEARNING_RATE.toy); // no benchmark yet: still toy
    p.importBenchmarkText(BENCH, 'tiny.json');
    await p.updateComplete;
    expect(q<HTMLSelectElement>(p, '#dataset').value).toBe('agent');
    expect(Number(lr(p))).toBe(2e-5);
    expect(DEFAULT_LEARNING_RATE.agent).toBeLessThanOrEqual(5e-5);

    // What reaches the planner's trainer is the real-planner rate, not the toy one.
    startButton(p).click();
    await expect.poll(() => starts.length, SLOW).toBe(1);
    expect(starts[0].config?.learningRate).toBe(2e-5);

    await choose(p, '#dataset', 'toy');
    expect(Number(lr(p))).toBe(DEFAULT_LEARNING_RATE.toy);
    await type(p, '#lr', '0.05');
    // A re-render for another reason leaves the typed value alone.
    p.points = [{ step: 1, reward: 0, rewardStd: 0, rollingReward: 0, loss: 0, kl: 0, gradNorm: 0, clipFraction: 0, tokensPerSecond: 0, plannerTokens: 0, samples: 0, noGradientGroups: 0, rolloutSeconds: 0, updateSeconds: 0 }];
    await p.updateComplete;
    expect(lr(p)).toBe('0.05');
    await choose(p, '#dataset', 'agent');
    expect(Number(lr(p))).toBe(2e-5); // the toy edit does not reach the real planner
    await type(p, '#lr', '0.00003');
    await choose(p, '#dataset', 'toy');
    expect(lr(p)).toBe('0.05');
    await choose(p, '#dataset', 'agent');
    expect(lr(p)).toBe('0.00003');
    startButton(p).click();
    await expect.poll(() => starts.length, SLOW).toBe(2);
    expect(starts[1].config?.learningRate).toBe(3e-5);
    p.remove();
  });
});

describe('Training panel start adapter', () => {
  it('starts a toy run from a stored toy adapter and a planner run from a stored planner adapter, each offered only in its mode', async () => {
    const dbName = `panel-start-${Math.random()}`;
    // A toy adapter trained for real, and a planner adapter (same tensors, another base model).
    const seed = await createToyDriver({ dataset: 'toy', reward: 'toy', groupSize: 2, steps: 1, learningRate: 0.02, rank: 2, targets: ['q', 'v'] }, dbName);
    await seed.run(() => undefined);
    const db = await openAgentDb(dbName);
    const toyAdapter = (await db.get('adapters', `${seed.runId}@step-1`))!;
    await db.put('adapters', { ...toyAdapter, id: 'planner-adapter', name: 'planner adapter', baseModel: 'qwen2-tiny', createdAt: toyAdapter.createdAt + 1 });

    const p = await mount(dbName);
    const options = () => [...q<HTMLSelectElement>(p, '#start-adapter').options].map((o) => o.value);
    expect(options()).toEqual(['', toyAdapter.id]);
    expect(q<HTMLInputElement>(p, '#rank').disabled).toBe(false);
    await choose(p, '#start-adapter', toyAdapter.id);
    expect(q<HTMLInputElement>(p, '#rank').disabled).toBe(true);
    expect(q(p, '[data-testid="start-adapter-note"]').textContent).toContain(`“${toyAdapter.name}” (rank 2, targets q, v)`);
    q<HTMLInputElement>(p, '#steps').value = '1';
    q<HTMLInputElement>(p, '#group').value = '2';
    await p.start();
    expect(p.state).toBe('done');
    expect(p.error).toBeNull();
    expect(q(p, '[data-testid="training-label"]').textContent).toContain(`from adapter “${toyAdapter.name}”`);
    const runs = (await db.getAll('trainingRuns')).filter((r) => r.id !== seed.runId);
    expect(runs).toHaveLength(1);
    expect(runs[0].config).toMatchObject({ spec: { adapter: { kind: 'stored', id: toyAdapter.id, name: toyAdapter.name } } });

    // Real-planner mode lists the planner adapter, not the toy ones, and hands its id to the worker.
    const { engines, trainer, starts } = plannerWithRecorder();
    p.engines = engines;
    p.trainer = trainer;
    p.importBenchmarkText(BENCH, 'tiny.json');
    await p.updateComplete;
    expect(options()[0]).toBe('');
    expect(options().slice(1)).toEqual(['planner-adapter']);
    expect(q<HTMLSelectElement>(p, '#start-adapter').value).toBe(''); // the toy choice does not carry over
    await choose(p, '#start-adapter', 'planner-adapter');
    startButton(p).click();
    await expect.poll(() => starts.length, SLOW).toBe(1);
    expect(starts[0].adapter).toEqual({ adapterId: 'planner-adapter' });
    await choose(p, '#start-adapter', '');
    startButton(p).click();
    await expect.poll(() => starts.length, SLOW).toBe(2);
    expect(starts[1].adapter).toEqual({ rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] });
    p.remove();
  });
});

describe('Training panel start', () => {
  it('starts one run however often Start is pressed while the first is being set up, and says it is starting', async () => {
    const p = await mount(`panel-once-${Math.random()}`);
    const { engines, trainer: client, starts } = plannerWithRecorder();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const trainStart = client.trainStart.bind(client);
    // The worker answers only when released, as a real one does after loading the adapter.
    client.trainStart = async (o: StartCall) => {
      await gate;
      return trainStart(o);
    };
    p.engines = engines;
    p.trainer = client;
    p.importBenchmarkText(BENCH, 'tiny.json');
    await p.updateComplete;
    const first = p.start();
    await p.updateComplete;
    expect(q(p, '[data-testid="training-status"]').textContent).toBe('Starting…');
    expect(startButton(p).disabled).toBe(true);
    const second = p.start();
    release();
    await Promise.all([first, second]);
    expect(starts).toHaveLength(1);
    await p.updateComplete;
    expect(startButton(p).disabled).toBe(false);
    expect(q(p, '[role="alert"]').textContent).toBe('recorded; no training in this test');
    p.remove();
  });
});

describe('Training panel replacing a run', () => {
  it('disposes the previous run\'s driver (its worker) when a new run starts, and only then', async () => {
    const p = await mount(`panel-replace-${Math.random()}`);
    const made: Array<{ disposed: number; runId: string }> = [];
    p.createDriver = async (s, db) => {
      const d = await createToyDriver({ ...s, steps: 1 }, db);
      const rec = { disposed: 0, runId: d.runId };
      made.push(rec);
      return Object.assign(d, { dispose: () => void rec.disposed++ });
    };
    await p.updateComplete;
    await p.start();
    expect(made).toHaveLength(1);
    expect(made[0].disposed).toBe(0);
    await p.start();
    expect(made).toHaveLength(2);
    expect(made.map((m) => m.disposed)).toEqual([1, 0]);
    expect(made[1].runId).not.toBe(made[0].runId);
    p.remove();
  });
});

describe('Training panel rollouts at once', () => {
  it('shows min(group size, 8) as the default, refuses a bad value with the driver’s message, and stores the chosen value in the run', async () => {
    const dbName = `panel-concurrency-${Math.random()}`;
    const p = await mount(dbName);
    const { engines, trainer, starts } = plannerWithRecorder();
    // This worker accepts the session; the rollouts then fail on the unscripted engines, after the run is stored.
    trainer.trainStart = async (o: StartCall) => {
      starts.push(structuredClone(o));
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: {} as never, skippedCheckpoints: [] };
    };
    p.engines = engines;
    p.trainer = trainer;
    p.importBenchmarkText(BENCH, 'tiny.json');
    await p.updateComplete;
    const field = q<HTMLInputElement>(p, '#rollout-concurrency');
    expect(field.value).toBe('');
    // The form's group of 8 decodes together (a 4-bit planner decodes 8 sequences per step).
    expect(field.placeholder).toBe('8');
    expect(field.max).toBe('8');
    await type(p, '#group', '12');
    expect(field.placeholder).toBe('8');
    await type(p, '#group', '3');
    expect(field.placeholder).toBe('3');
    expect(q(p, '[data-testid="rollout-concurrency-hint"]').textContent).toMatch(/planner calls decoded together/);

    const refused = async (value: string, message: string) => {
      field.value = value;
      await p.start();
      await p.updateComplete;
      expect(q(p, '[role="alert"]').textContent).toBe(message);
      expect(starts).toHaveLength(0);
    };
    await refused('0', 'training: rolloutConcurrency must be a positive integer, got 0');
    await refused('2.5', 'training: rolloutConcurrency must be a positive integer, got 2.5');
    await refused('9', 'training: rolloutConcurrency must be at most 8, got 9');

    q<HTMLInputElement>(p, '#steps').value = '1';
    field.value = '2';
    await p.start();
    expect(starts).toHaveLength(1);
    field.value = '';
    await p.start();
    expect(starts).toHaveLength(2);
    const runs = await (await openAgentDb(dbName)).getAll('trainingRuns');
    const stored = (id: string) => (runs.find((r) => r.id === id)!.config as { spec: { collector: { budget: { rolloutConcurrency: number } } } }).spec.collector.budget.rolloutConcurrency;
    // The typed value, then the default for a group of 3.
    expect(starts.map((s) => stored(s.runId))).toEqual([2, 3]);
    p.remove();
  });
});

describe('Training panel progress, stored runs and results', () => {
  it('shows step k of n with a bar and the time left while a run goes, keeps every run’s charts across a remount, and names the result', async () => {
    const dbName = `panel-progress-${Math.random()}`;
    const p = await mount(dbName);
    // A real toy run in this thread, held at its first checkpoint (the end of step 4, before step 4 is reported)
    // until the test has seen the progress.
    const release = holdToyRunAtCheckpoint(p, 4);
    const started = p.start();
    await expect.poll(() => q(p, '[data-testid="training-progress"]')?.textContent ?? '', SLOW).toMatch(/Step 3 of 4, about \d+ s left/);
    expect(q<HTMLProgressElement>(p, '[data-testid="training-progress"] progress').value).toBe(3);
    expect(q(p, '[data-testid="training-status"]').textContent).toMatch(/^Running: step 3 of 4, reward \d\.\d\d$/);
    release();
    await started;
    expect(p.state).toBe('done');
    await p.updateComplete;
    expect(q(p, '[data-testid="training-status"]').textContent).toMatch(/^Done: step 4 of 4, reward \d\.\d\d$/);
    expect(q(p, '[data-testid="training-result"]').textContent).toMatch(/^Result: the adapter of step [1-4], the best rolling reward \(\d\.\d\d\)\.$/);
    const runId = /run (toy-\S+)/.exec(q(p, '[data-testid="training-label"]').textContent ?? '')![1];
    p.remove();

    // A "reload": the newest run comes back from IndexedDB, shown with its charts, without a click.
    const again = await mount(dbName);
    await expect.poll(() => q(again, '[data-testid="training-status"]').textContent, SLOW).toMatch(/^Done: step 4 of 4, reward \d\.\d\d$/);
    const item = q(again, `[data-testid="training-runs"] li[data-run="${runId}"]`);
    expect(item.textContent!.replace(/\s+/g, ' ')).toMatch(/: step 4 of 4 — done, result step [1-4] \(shown above\)/);
    expect(item.querySelector('button')).toBeNull(); // shown already, and done: nothing to show or resume
    // Points on each chart's canvas: the reward and its rolling mean, loss, KL, clip fraction, tokens/s, rollout time.
    // The toy trains at beta 0, where the KL is not measured: its chart has no point and says why.
    const charts = () => [...again.shadowRoot!.querySelectorAll('[data-testid="training-charts"] agentflow-line-chart')];
    const points = () => charts().map((c) => c.shadowRoot?.querySelector<HTMLElement>('.plot')?.dataset.points ?? '');
    await expect.poll(points, SLOW).toEqual(['4,4', '4', '0', '4', '4', '4']);
    expect(charts()[2].shadowRoot!.querySelector('[data-testid="flat-note"]')?.textContent).toMatch(/^not measured: this run trains with beta 0/);
    // The smoothing control draws each chart's EMA beside its raw points, which stay.
    const legend = () => charts()[0].shadowRoot?.querySelector('.u-legend')?.textContent ?? '';
    expect(legend()).not.toContain('(smoothed)');
    const smoothing = q<HTMLSelectElement>(again, '#smoothing');
    expect([...smoothing.options].map((o) => o.textContent)).toEqual(['off', 'EMA 0.6', 'EMA 0.9']);
    smoothing.value = '0.9';
    smoothing.dispatchEvent(new Event('change'));
    await expect.poll(legend, SLOW).toMatch(/reward \(smoothed\).*rolling \(smoothed\)/);
    await expect.poll(points, SLOW).toEqual(['4,4', '4', '0', '4', '4', '4']);
    // A stored run shown: its own length, from its spec.
    expect(q(again, '[data-testid="training-status"]').textContent).toMatch(/^Done: step 4 of 4, reward \d\.\d\d$/);
    expect(q(again, '[data-testid="training-result"]').textContent).toMatch(/^Result: the adapter of step [1-4]/);
    again.remove();
  });
});

describe('Training panel engine use', () => {
  it('does not report a toy run as using the page’s engines when no engines are loaded (loading models must not pause it)', async () => {
    const p = await mount(`panel-use-${Math.random()}`);
    const release = holdToyRunAtCheckpoint(p, 1);
    expect(p.engines).toBeUndefined();
    const started = p.start();
    await expect.poll(() => p.state, SLOW).toBe('running');
    expect(p.engineUse()).toBeNull();
    release();
    await started;
    p.remove();
  });
});

describe('Training panel adapters table', () => {
  it('names the adapter on each row’s Activate button, so rows are told apart without sight of the table', async () => {
    const dbName = `panel-names-${Math.random()}`;
    const db = await openAgentDb(dbName);
    const tensors = { w: { shape: [1], data: new Float32Array(1) } };
    for (const name of ['first', 'second']) await db.put('adapters', { id: name, name, createdAt: 0, baseModel: 'toy', config: {}, tensors });
    const p = await mount(dbName);
    const names = [...adaptersRoot(p).querySelectorAll('[data-testid="adapters"] button[aria-pressed]')].map((b) => b.getAttribute('aria-label'));
    expect(names.sort()).toEqual(['Activate adapter first', 'Activate adapter second']);
    // A narrow screen scrolls the table in its own box (a keyboard can reach it) instead of squeezing it.
    const box = adaptersRoot(p).querySelector('[data-testid="adapters"]')!.parentElement!;
    expect([getComputedStyle(box).overflowX, box.getAttribute('role'), box.tabIndex]).toEqual(['auto', 'region', 0]);
    p.remove();
  });

  it('on a phone drops the Created column, and shows the date under the name of kept and imported adapters (a checkpoint’s name has its time)', async () => {
    const dbName = `panel-phone-${Math.random()}`;
    const db = await openAgentDb(dbName);
    const tensors = { w: { shape: [1], data: new Float32Array(1) } };
    const at = new Date(2026, 10, 25, 9, 30).getTime();
    await db.put('adapters', { id: 'ckpt', name: 'run-1 step 3 (09:30)', createdAt: at, baseModel: 'toy', config: {}, tensors, trainingRunId: 'run-1' });
    await db.put('adapters', { id: 'kept', name: 'my best', createdAt: at + 1, baseModel: 'toy', config: {}, tensors, trainingRunId: 'run-1', keep: true });
    await db.put('adapters', { id: 'imported', name: 'from PEFT', createdAt: at + 2, baseModel: 'toy', config: {}, tensors });
    const p = await mount(dbName);
    const root = adaptersRoot(p);
    // Every group open (only the newest run's is, at first).
    for (const d of root.querySelectorAll('details')) d.open = true;
    const shown = (sel: string) => [...root.querySelectorAll<HTMLElement>(sel)].filter((e) => getComputedStyle(e).display !== 'none').length;
    try {
      await page.viewport(390, 800);
      await expect.poll(() => shown('[data-testid="adapters"] .created'), SLOW).toBe(0);
      expect(shown('[data-testid="created-inline"]')).toBe(2);
      const rows = [...root.querySelectorAll('[data-testid="adapters"] tbody tr')];
      const inline = (name: string) => rows.find((r) => r.textContent?.includes(name))!.querySelector('[data-testid="created-inline"]')?.textContent;
      expect([inline('my best'), inline('from PEFT'), inline('run-1 step 3')]).toEqual([new Date(at + 1).toLocaleString(), new Date(at + 2).toLocaleString(), undefined]);
      // A wide screen has the column, and no second copy of the date.
      await page.viewport(1100, 800);
      // Two groups (run-1's two, the imported one): a header and a cell per row in each.
      await expect.poll(() => shown('[data-testid="adapters"] .created'), SLOW).toBe(5);
      expect(shown('[data-testid="created-inline"]')).toBe(0);
    } finally {
      await page.viewport(414, 896);
      p.remove();
    }
  });
});

describe('Training panel import problems', () => {
  it('lists each skipped item of an imported benchmark with its line and reason, as the Experiments tab does', async () => {
    const p = await mount(`panel-problems-${Math.random()}`);
    p.importBenchmarkText(['{"pid": "a", "question": "1+1?", "answer": "2"}', '{"pid": "b", "question": "2+2?", "answer": {"toString": "boom"}}', '{"pid": "a", "question": "1+1?", "answer": "2"}'].join('\n'), 'mixed.jsonl');
    await p.updateComplete;
    expect(q(p, '[data-testid="training-benchmark-summary"]').textContent).toBe('Imported 1 item from “mixed” (reward: exact); 2 skipped.');
    expect([...p.shadowRoot!.querySelectorAll('[data-testid="training-import-problems"] li')].map((li) => li.textContent)).toEqual([
      `line 2 of mixed.jsonl: 'answer' is an object ({"toString":"boom"}); an answer is a string, a number or a list of them`,
      'line 3 of mixed.jsonl: repeats pid "a" with the same question as line 1; only the first is kept',
    ]);
    p.importBenchmarkText(BENCH, 'tiny.json');
    await p.updateComplete;
    expect(q(p, '[data-testid="training-import-problems"]')).toBeNull();
  });
});

describe('Training panel kept benchmarks', () => {
  it('offers an imported benchmark again after a reload: the dataset option stays open and a paused run’s benchmark is chosen', async () => {
    const dbName = `panel-kept-${Math.random()}`;
    const { engines, trainer } = plannerWithRecorder();
    const first = await mount(dbName);
    first.engines = engines;
    first.trainer = trainer;
    first.importBenchmarkText(BENCH, 'tiny.json');
    await expect.poll(() => first.shadowRoot!.querySelectorAll('[data-testid="training-stored-benchmarks"] option').length, SLOW).toBe(1);
    await new Promise((r) => setTimeout(r, 5)); // a later import time
    first.importBenchmarkText(JSON.stringify([{ pid: 'b', query: 'What is 2+2?', answer: '4' }, { pid: 'c', query: 'What is 3+3?', answer: '6' }]), 'other.json');
    await expect.poll(() => [...first.shadowRoot!.querySelectorAll<HTMLOptionElement>('[data-testid="training-stored-benchmarks"] option')].filter((o) => o.value).length, SLOW).toBe(2);
    first.remove();
    // A run on “tiny” paused before the reload (the newest import is “other”).
    await new IdbRunStore(dbName).save({
      id: 'agent-paused',
      createdAt: Date.now(),
      updatedAt: Date.now(),
      status: 'paused',
      spec: { task: 'agent', label: 'Planner on agent rollouts of “tiny” (planner:test)', dataset: 'tiny', steps: 10, grpo: {}, adapter: { kind: 'fresh', rank: 4, alpha: 8, targets: ['q'] }, keepCheckpoints: 3, bestWindow: 20, collector: {} },
      history: [],
      result: null,
    });

    // After the reload: the same storage, engines loaded again.
    const p = await mount(dbName);
    p.engines = engines;
    p.trainer = trainer;
    try {
      await expect.poll(() => [...p.shadowRoot!.querySelectorAll('[data-testid="training-stored-benchmarks"] option')].map((o) => o.textContent!.replace(/ imported .*/, '')), SLOW).toEqual(['other: 2 items, exact,', 'tiny: 1 item, exact,']);
      await expect.poll(() => q(p, '[data-testid="training-benchmark-summary"]')?.textContent, SLOW).toBe('Imported 1 item from “tiny” (reward: exact).');
      expect(q(p, '[data-testid="training-runs"]').textContent).toContain('agent-paused');
      const agentOption = q<HTMLOptionElement>(p, '#dataset option[value="agent"]');
      expect(agentOption.disabled).toBe(false);
      // The paused agent run is shown: the form is in its mode, with its steps.
      await expect.poll(() => q<HTMLSelectElement>(p, '#dataset').value, SLOW).toBe('agent');
      expect(q<HTMLInputElement>(p, '#steps').value).toBe('10');
      await choose(p, '#dataset', 'agent');
      expect(q<HTMLSelectElement>(p, '#reward').textContent!.trim()).toBe('Reference answers (exact)');
      // The other kept benchmark is one choice away.
      const list = q<HTMLSelectElement>(p, '[data-testid="training-stored-benchmarks"]');
      await choose(p, '[data-testid="training-stored-benchmarks"]', list.options[0].value);
      expect(q(p, '[data-testid="training-benchmark-summary"]').textContent).toBe('Imported 2 items from “other” (reward: exact).');
      expect(q(p, '[data-testid="agent-availability"]').textContent).toContain('of the 2 items of “other”');
    } finally {
      p.remove();
    }
  });
});
