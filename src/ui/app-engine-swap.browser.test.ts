// The app replacing its engines while something runs on them, in Chromium with real IndexedDB. The loaded
// models are stood in for by an engine whose calls wait until they are aborted or the engine is disposed
// (disposing rejects them as the planner worker's end does), and a planner trainer that starts runs and
// checkpoints; no model loads. Loading other models (here: the event Models & GPU sends when a load is done,
// and its scripted-demo button) must stop a training run, an experiment and a chat answer cleanly before the
// old engines go, never dispose the engines under them.
import { describe, expect, it } from 'vitest';
import { detectModule } from '../agent/prompts';
import type { PlannerTrainer } from '../planner/planner-client';
import type { PlannerInfo } from '../planner/planner-protocol';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream } from '../engine/chat-stream';
import { resolveGrpoConfig } from '../trainer/grpo-config';
import { listRuns } from '../trainer/run/run-store-idb';
import type { AgentFlowChat } from './agentflow-chat';
import type { AgentFlowApp } from './app-shell';
import './app-shell';
import type { AgentflowExperimentsPanel } from './experiments-panel';
import type { AgentflowModelsPanel } from './models-panel';
import type { AgentflowTrainingPanel } from './training-panel';

/** Loaded engines whose calls run until aborted; dispose() ends them as a terminated worker does. */
class HeldEngines {
  readonly calls: Array<ReturnType<typeof detectModule> | 'other'> = [];
  /** The training panel's state when dispose() was called (null: not called). */
  disposedWhileTraining: string | null = null;
  private readonly pending = new Set<(e: Error) => void>();
  readonly planner: ChatEngine;
  readonly shared: ChatEngine;

  constructor(
    id: string,
    private readonly training: () => string,
  ) {
    const engine = (name: string): ChatEngine => ({ id: `${name}:${id}`, stream: (m, o) => chatStream(() => this.chat(m, o)) });
    this.planner = engine('planner');
    this.shared = engine('shared');
  }

  private chat(messages: ChatMessage[], options: GenerateOptions = {}): Promise<GenerationResult> {
    this.calls.push(detectModule(messages) ?? 'other');
    return new Promise((_resolve, reject) => {
      const fail = (e: Error) => {
        this.pending.delete(fail);
        reject(e);
      };
      this.pending.add(fail);
      options.signal?.addEventListener('abort', () => fail(options.signal!.reason ?? new DOMException('Aborted', 'AbortError')), { once: true });
    });
  }

  dispose(): void {
    this.disposedWhileTraining = this.training();
    for (const fail of [...this.pending]) fail(new Error('planner worker stopped (terminated)'));
  }
}

function trainer(): PlannerTrainer & { starts: number } {
  const t = {
    starts: 0,
    async trainStart(o: Parameters<PlannerTrainer['trainStart']>[0]) {
      t.starts++;
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: !!o.resume, config: resolveGrpoConfig(o.config ?? {}), skippedCheckpoints: [] };
    },
    trainStep: () => Promise.reject(new Error('no step finishes in this test')),
    trainCheckpoint: async () => ({ step: 0, adapterId: 'none' }),
    trainStop: () => undefined,
    decodeStats: async () => ({ steps: 0, rows: 0 }),
    info: async () => ({ activeAdapter: null, adapters: [] }) as unknown as PlannerInfo,
    setActiveAdapter: async () => undefined,
    addAdapterBytes: () => Promise.reject(new Error('unused')),
  };
  return t as unknown as PlannerTrainer & { starts: number };
}

const BENCH = JSON.stringify([{ pid: 'a', query: 'What is 1+1?', answer: '2' }]);

async function mountApp(): Promise<{ app: AgentFlowApp; dbName: string; models: AgentflowModelsPanel; training: AgentflowTrainingPanel; experiments: AgentflowExperimentsPanel; chat: AgentFlowChat }> {
  const dbName = `app-swap-${Math.random()}`;
  const app = document.createElement('agentflow-app') as AgentFlowApp;
  app.setAttribute('db-name', dbName);
  document.body.append(app);
  await app.updateComplete;
  const r = app.renderRoot;
  return {
    app,
    dbName,
    models: r.querySelector('agentflow-models-panel')!,
    training: r.querySelector('agentflow-training-panel')!,
    experiments: r.querySelector('agentflow-experiments-panel')!,
    chat: r.querySelector('agentflow-chat')!,
  };
}

/** What Models & GPU sends once a load is done. */
function loaded(models: AgentflowModelsPanel, engines: HeldEngines, label: string): void {
  models.dispatchEvent(new CustomEvent('agentflow-engines', { detail: { engines, trainer: trainer(), label }, bubbles: true, composed: true }));
}

/** Starts a real-planner training run on the loaded engines; resolves once its rollouts are under way. */
async function startTraining(training: AgentflowTrainingPanel, engines: HeldEngines): Promise<void> {
  await training.updateComplete;
  training.importBenchmarkText(BENCH, 'tiny.json');
  await training.updateComplete;
  const field = (id: string, v: string) => ((training.renderRoot.querySelector(`#${id}`) as HTMLInputElement).value = v);
  field('group', '2');
  field('steps', '3');
  void training.start();
  await expect.poll(() => engines.calls.length, { timeout: 5000 }).toBeGreaterThan(0);
  expect(training.state).toBe('running');
}

const text = (el: Element, sel: string) => (el.shadowRoot!.querySelector(sel)?.textContent ?? '').replace(/\s+/g, ' ').trim();

/** The app with a training run on loaded engines 'old', and the models panel asking about it after "Use the scripted demo". */
async function askingAboutTraining(): Promise<Awaited<ReturnType<typeof mountApp>> & { old: HeldEngines; demoButton: () => HTMLButtonElement }> {
  const mounted = await mountApp();
  const { models, training } = mounted;
  const old = new HeldEngines('old', () => training.state);
  loaded(models, old, 'old models');
  await expect.poll(() => training.engines).toBe(old);
  await startTraining(training, old);
  const demoButton = () => [...models.renderRoot.querySelectorAll('button')].find((b) => b.textContent === 'Use the scripted demo')!;
  demoButton().click();
  await expect.poll(() => text(models, '[data-testid="swap-confirm"]')).toMatch(/^A training run \(.*\) is using the loaded models\. /);
  return { ...mounted, old, demoButton };
}

describe('<agentflow-app> replacing its engines', () => {
  it('stops a training run, an experiment and a chat answer cleanly before disposing the engines they run on', async () => {
    const { app, dbName, models, training, experiments, chat } = await mountApp();
    try {
      const old = new HeldEngines('m', () => training.state);
      loaded(models, old, 'old models');
      await expect.poll(() => training.engines).toBe(old);
      await startTraining(training, old);

      experiments.importText(BENCH, 'tiny.json');
      await experiments.updateComplete;
      [...experiments.renderRoot.querySelectorAll('button')].find((b) => b.textContent === 'Run')!.click();
      await expect.poll(() => experiments.engineUse()?.what ?? '').toMatch(/experiment run/);
      void chat.ask('What is 2+2?');
      await expect.poll(() => chat.engineUse()?.what ?? '').toBe('a chat answer');

      // A load finishing now (started before the run, or confirmed) swaps the engines: the same planner
      // loaded again, so the run can continue on it.
      const next = new HeldEngines('m', () => training.state);
      loaded(models, next, 'new models');
      await expect.poll(() => app.engines).toBe(next);

      // The old engines went only after the run had paused: it never saw "planner worker stopped".
      expect(old.disposedWhileTraining).toBe('paused');
      expect(training.error).toBeNull();
      const run = (await listRuns(dbName)).find((r) => r.spec.task === 'agent')!;
      expect(run.status).toBe('paused');
      expect(experiments.error).toBeNull();
      await expect.poll(() => experiments.engineUse()).toBeNull();
      expect(chat.engineUse()).toBeNull();
      expect(app.notice).toMatch(/Stopped first: a training run .*paused with its checkpoints kept; resume it in Training.*an experiment run.*a chat answer/);

      // Resume continues the stored run on the engines loaded now, not on the disposed ones.
      const resumed = training.resume();
      await expect.poll(() => training.error ?? (next.calls.length > 0 ? 'rollouts on the new engines' : null), { timeout: 5000 }).toBe('rollouts on the new engines');
      expect(training.state).toBe('running');
      training.pause();
      await resumed;
      expect(training.state).toBe('paused');
    } finally {
      app.remove();
    }
  });

  it('asks before switching away from the models a training run uses, and pauses the run when the user accepts', async () => {
    const { app, models, training, old, demoButton } = await askingAboutTraining();
    try {
      expect(text(models, '[data-testid="swap-confirm"]')).toMatch(/^A training run \(.*\) is using the loaded models\. Switching to the scripted demo stops it: it is paused with its checkpoints kept/);
      expect(app.engines).toBe(old);

      // "Keep it running" changes nothing.
      [...models.renderRoot.querySelectorAll<HTMLButtonElement>('[data-testid="swap-confirm"] button')].find((b) => /^Keep/.test(b.textContent ?? ''))!.click();
      await expect.poll(() => models.renderRoot.querySelector('[data-testid="swap-confirm"]')).toBeNull();
      expect(training.state).toBe('running');
      expect(old.disposedWhileTraining).toBeNull();

      // A load asks the same; the demo, accepted, pauses the run and only then disposes the old engines.
      void models.load();
      await expect.poll(() => text(models, '[data-testid="swap-confirm"]')).toMatch(/Loading other models stops it once they are ready/);
      expect(app.loading).toBeNull();
      demoButton().click();
      await models.updateComplete;
      [...models.renderRoot.querySelectorAll<HTMLButtonElement>('[data-testid="swap-confirm"] button')].find((b) => /^Stop/.test(b.textContent ?? ''))!.click();
      await expect.poll(() => app.enginesLabel).toBe('scripted demo (no model)');
      expect(old.disposedWhileTraining).toBe('paused');
      expect(training.error).toBeNull();
    } finally {
      app.remove();
    }
  });

  it('closes the swap question, starting nothing, when what it asks about ends by itself', async () => {
    const { app, models, training, old } = await askingAboutTraining();
    try {

      // The user pauses the run in Training while the question is open.
      training.pause();
      await expect.poll(() => models.renderRoot.querySelector('[data-testid="swap-confirm"]')).toBeNull();
      expect(text(models, '[data-testid="models-notice"]')).toMatch(/^Nothing uses the loaded models any more \(a training run .* ended\), so there is nothing to stop\. Switching to the scripted demo did not start: press “Use the scripted demo” again to go ahead\.$/);
      expect(app.engines).toBe(old);
      expect(old.disposedWhileTraining).toBeNull();
    } finally {
      app.remove();
    }
  });

  it('keeps the loaded engines, and disposes the new ones, when what runs on them will not stop', async () => {
    const { app, models, chat } = await mountApp();
    try {
      const old = new HeldEngines('old', () => 'none');
      loaded(models, old, 'old models');
      await expect.poll(() => app.engines).toBe(old);
      // A use whose stop() resolves but which is still there afterwards (it restarts itself).
      let stops = 0;
      chat.engineUse = () => ({ what: 'a stubborn answer', kept: 'nothing', stop: async () => void stops++ });
      const next = new HeldEngines('next', () => 'none');
      let nextDisposed = false;
      const dispose = next.dispose.bind(next);
      next.dispose = () => {
        nextDisposed = true;
        dispose();
      };
      loaded(models, next, 'new models');
      await expect.poll(() => app.notice ?? '').toMatch(/^Did not switch to new models: a stubborn answer kept running/);
      expect(stops).toBe(5);
      expect(app.engines).toBe(old);
      expect(old.disposedWhileTraining).toBeNull();
      expect(nextDisposed).toBe(true);
    } finally {
      app.remove();
    }
  });
});
