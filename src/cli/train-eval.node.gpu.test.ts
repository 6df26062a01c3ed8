// `cli train --eval-data` as a user runs it (a separate process, Dawn on lavapipe, the qwen2-tiny planner):
// eval.jsonl gets one line per scheduled evaluation (the start adapter, every K-th step, the last step), each
// naming the checkpoint it judged, and stdout's summary carries them. (A resumed run keeping eval.jsonl is in
// src/trainer/run/training-run-eval.test.ts, with the directory store: a second CLI run doubles this test's time.)
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyChatModelDir } from '../../tests/support/tiny-chat-model';
import { runCli } from './cli-spawn';
import type { EvalPoint } from '../trainer/run/metrics';

function evalLines(file: string): EvalPoint[] {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as EvalPoint);
}

describe('cli train --eval-data on the real planner (qwen2-tiny)', () => {
  it('writes eval.jsonl at step 0, every K-th step and the last step', async () => {
    const model = tinyChatModelDir();
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-train-eval-'));
    const data = join(dir, 'mult.jsonl');
    const held = join(dir, 'held.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "What is 2 times 3?", "answer": "6"}\n');
    writeFileSync(held, '{"pid": "h1", "query": "What is 4 times 5?", "answer": "20"}\n');
    const out = join(dir, 'run');
    const flags = ['--model', model, '--data', data, '--out', out, '--group', '2', '--max-turns', '1', '--max-new-tokens', '4', '--tools', 'base_generator', '--rank', '2', '--extra-rollouts', '0', '--eval-data', held, '--eval-every', '2'];
    const r = await runCli(['train', ...flags, '--steps', '3']);
    expect(r.code, r.stderr).toBe(0);
    const first = evalLines(join(out, 'eval.jsonl'));
    expect(first.map((p) => p.step)).toEqual([0, 2, 3]);
    for (const p of first) {
      expect(p.total).toBe(1);
      expect(p.accuracy).toBe(p.correct);
      expect(p.seconds).toBeGreaterThan(0);
      expect(p.error).toBeUndefined();
    }
    expect(first[0].adapter).toMatch(/^fresh LoRA adapter/);
    expect(first[1].adapter).toMatch(/[\\/]checkpoints[\\/]step-0*2$/);
    expect(first[2].adapter).toMatch(/[\\/]checkpoints[\\/]step-0*3$/);
    expect(r.stderr).toMatch(/eval at step 2: accuracy \d\.\d{3} \(\d\/1\)/);
    expect(JSON.parse(r.stdout).evals.map((p: EvalPoint) => p.step)).toEqual([0, 2, 3]);
  }, 1_200_000);
});
