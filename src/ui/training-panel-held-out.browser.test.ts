// The Training tab's held-out file in agent mode (Chromium, real IndexedDB): files picked through the form's
// inputs, the "every K steps" field, the stored run's spec carrying the held-out items and K as
// `cli train --eval-data` and the element's train({ evalItems }) do, and each refusal named in the form. The
// planner's worker is stood in for by a recorder that accepts the session (the rollouts then fail on the
// unscripted engines, after the run is stored).
import { describe, expect, it } from 'vitest';
import { ScriptedEngine } from '../agent/scripted-engine';
import { openAgentDb } from '../store/db';
import type { PolicyTrainer } from '../trainer/training-host';
import type { RunSpec } from '../trainer/run/run-store';
import type { AgentflowTrainingPanel } from './training-panel';
import './training-panel';

const SLOW = { timeout: 60_000 };

const BENCH = JSON.stringify([
  { pid: 'a', query: 'What is 1+1?', answer: '2' },
  { pid: 'b', query: 'What is 2+2?', answer: '4' },
]);

type StartCall = Parameters<PolicyTrainer['trainStart']>[0];

function recordingPlanner() {
  const starts: StartCall[] = [];
  const trainer: PolicyTrainer = {
    async trainStart(o) {
      starts.push(structuredClone(o));
      return { runId: o.runId, adapterId: `training:${o.runId}`, step: 0, optimizerSteps: 0, resumed: false, config: {} as never, skippedCheckpoints: [] };
    },
    trainStep: () => Promise.reject(new Error('unused')),
    trainCheckpoint: () => Promise.reject(new Error('unused')),
    trainStop: () => undefined,
  };
  return { engines: { planner: new ScriptedEngine({}, 'planner:test'), shared: new ScriptedEngine({}, 'shared:test') }, trainer, starts };
}

async function mount(): Promise<{ p: AgentflowTrainingPanel; dbName: string; starts: StartCall[] }> {
  const dbName = `panel-held-out-${Math.random()}`;
  const p = document.createElement('agentflow-training-panel') as AgentflowTrainingPanel;
  p.dbName = dbName;
  const { engines, trainer, starts } = recordingPlanner();
  p.engines = engines;
  p.trainer = trainer;
  document.body.append(p);
  await p.updateComplete;
  return { p, dbName, starts };
}

const q = <T extends Element>(p: AgentflowTrainingPanel, sel: string) => p.shadowRoot!.querySelector(sel) as T | null;
const text = (e: Element | null) => (e?.textContent ?? '').replace(/\s+/g, ' ').trim();

/** Chooses an in-memory file in one of the form's file inputs, as a user's pick does. */
function pick(p: AgentflowTrainingPanel, testId: string, contents: string, name: string): void {
  const input = q<HTMLInputElement>(p, `[data-testid="${testId}"]`)!;
  const dt = new DataTransfer();
  dt.items.add(new File([contents], name, { type: 'application/json' }));
  input.files = dt.files;
  input.dispatchEvent(new Event('change'));
}

async function withBenchmark(): Promise<{ p: AgentflowTrainingPanel; dbName: string; starts: StartCall[] }> {
  const m = await mount();
  pick(m.p, 'training-benchmark-file', BENCH, 'tiny.json');
  await expect.poll(() => q<HTMLSelectElement>(m.p, '#dataset')?.value).toBe('agent');
  await expect.poll(() => q(m.p, '[data-testid="training-held-out-file"]')).not.toBeNull();
  return m;
}

describe('Training tab held-out file (agent mode)', () => {
  it('puts the held-out items and the "every K steps" into the run’s spec, scored like the training benchmark', async () => {
    const { p, dbName, starts } = await withBenchmark();
    expect(q(p, '#held-out-every')).toBeNull(); // nothing to evaluate yet
    const held = ['{"pid": "h1", "question": "What is 4 times 5?", "answer": "20"}', '{"pid": "h2", "question": "What is 9 minus 3?", "answer": "6"}'].join('\n');
    pick(p, 'training-held-out-file', held, 'held.jsonl');
    await expect.poll(() => text(q(p, '[data-testid="training-held-out-summary"]'))).toBe('Held out: 2 items from “held.jsonl”.');
    const every = q<HTMLInputElement>(p, '#held-out-every')!;
    expect(every.value).toBe('10');
    q<HTMLInputElement>(p, '#steps')!.value = '6';
    every.value = '3';
    await p.start();
    expect(starts).toHaveLength(1);
    const rec = (await (await openAgentDb(dbName)).getAll('trainingRuns')).find((r) => r.id === starts[0].runId)!;
    const spec = (rec.config as { spec: RunSpec }).spec;
    expect(spec.evaluation).toEqual({
      every: 3,
      dataset: 'held',
      kind: 'exact',
      items: [
        { pid: 'h1', query: 'What is 4 times 5?', answer: '20' },
        { pid: 'h2', query: 'What is 9 minus 3?', answer: '6' },
      ],
    });
    p.remove();
  });

  it('refuses an interval beyond the run’s steps, naming the field, and starts nothing', async () => {
    const { p, starts } = await withBenchmark();
    pick(p, 'training-held-out-file', JSON.stringify([{ question: 'What is 7+7?', answer: '14' }]), 'held.json');
    await expect.poll(() => q(p, '#held-out-every')).not.toBeNull();
    q<HTMLInputElement>(p, '#steps')!.value = '5';
    await p.start();
    await p.updateComplete;
    expect(text(q(p, '[role="alert"]'))).toBe("Test on the held-out items every … steps must be a whole number from 1 to the run's 5 steps, got 10");
    expect(starts).toHaveLength(0);
    p.remove();
  });

  const refusals: [string, string, string, RegExp][] = [
    ['a file that does not parse', '[{"question": "What is 7+7?", "answer": ', 'broken.json', /^The held-out file “broken\.json” could not be read: broken\.json is not valid JSON: .+\.$/],
    [
      'a file with no reference answers',
      JSON.stringify([{ question: 'What is 7+7?' }, { question: 'What is 8+8?' }]),
      'unanswered.json',
      /^The held-out file “unanswered\.json” has no item with a reference answer \('answer'\), so nothing could be scored\.$/,
    ],
    [
      'a file sharing questions with the training benchmark',
      JSON.stringify([{ question: 'what is 1+1? ', answer: '2' }, { question: 'What is 2+2?', answer: '4' }, { question: 'What is 7+7?', answer: '14' }]),
      'overlap.json',
      /^The held-out file “overlap\.json” shares 2 questions with the training benchmark “tiny” \(e\.g\. “what is 1\+1\? ”\): held-out items must be questions the run does not train on\.$/,
    ],
  ];
  for (const [what, contents, name, message] of refusals) {
    it(`refuses ${what}, naming the file in the form, and starts nothing`, async () => {
      const { p, dbName, starts } = await withBenchmark();
      pick(p, 'training-held-out-file', contents, name);
      await expect.poll(() => text(q(p, '[data-testid="training-held-out-problem"]'))).toMatch(message);
      expect(q(p, '#held-out-every')).toBeNull();
      await p.start();
      await p.updateComplete;
      expect(text(q(p, '[role="alert"]'))).toMatch(message);
      expect(starts).toHaveLength(0);
      // Without the file the run starts, with no held-out evaluation.
      q<HTMLButtonElement>(p, '[data-testid="training-held-out-clear"]')!.click();
      await expect.poll(() => q(p, '[data-testid="training-held-out-problem"]')).toBeNull();
      q<HTMLInputElement>(p, '#steps')!.value = '1';
      await p.start();
      await expect.poll(() => starts.length, SLOW).toBe(1);
      const rec = (await (await openAgentDb(dbName)).getAll('trainingRuns')).find((r) => r.id === starts[0].runId)!;
      expect((rec.config as { spec: RunSpec }).spec.evaluation).toBeUndefined();
      p.remove();
    });
  }
});
