// The CLI end to end on the qwen2-tiny fixture (spawned as a separate process on Dawn), against the
// float64 PyTorch outputs in expected.json.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readExpected, TINY } from '../../tests/support/qwen2-fixture';
import { maxAbsDiff } from '../../tests/support/compare';
import { runCli } from './cli-spawn';

const expected = readExpected();

describe('planner CLI on the qwen2-tiny fixture', () => {
  const input = join(mkdtempSync(join(tmpdir(), 'agentflow-cli-')), 'seqs.json');
  writeFileSync(input, JSON.stringify({ sequences: expected.forward.map((f) => f.tokens) }));

  for (const withAdapter of [false, true]) {
    it(`score ${withAdapter ? 'with' : 'without'} the adapter`, async () => {
      const r = await runCli(['score', '--model', TINY, ...(withAdapter ? ['--adapter', join(TINY, 'adapter')] : []), '--input', input]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { logprobs: number[][] };
      expect(out.logprobs.length).toBe(expected.forward.length);
      expected.forward.forEach((f, i) => {
        expect(maxAbsDiff(out.logprobs[i], withAdapter ? f.logprobs_adapter : f.logprobs_base)).toBeLessThan(2e-3);
      });
    }, 120_000);
  }

  it('greedy generate with the adapter', async () => {
    const g = expected.greedy;
    const r = await runCli([
      'generate', '--model', TINY, '--adapter', join(TINY, 'adapter'),
      '--prompt-ids', g.prompt.join(','), '--max-new-tokens', String(g.continuation.length), '--temperature', '0',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).tokens).toEqual(g.continuation);
  }, 120_000);

  it('an out-of-range id fails naming it and the vocabulary size', async () => {
    const r = await runCli(['generate', '--model', TINY, '--prompt-ids', '1,999', '--max-new-tokens', '2']);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/id 999.*\[0, 320\)/);
  }, 120_000);
});
