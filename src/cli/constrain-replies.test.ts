// `--constrain-replies on|off` (cli eval, cli train) reaches the agent loop's AgentConfig.constrainReplies
// through the rollout budget and the evaluation settings; anything but on or off is refused, naming the flag.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY } from '../io/test-fixtures';
import { runCli } from './cli-spawn';
import { TRAIN_USAGE } from './train';
import { resolveConfig } from '../agent/loop';
import { DEFAULT_AGENT_BUDGET, rolloutAgentConfig } from '../trainer/run/agent-run';
import { onOffFlag, parseArgs, UsageError } from './args';
import { EVAL_FLAGS, EVAL_USAGE } from './eval';

describe('--constrain-replies', () => {
  it('reads on and off, defaults when absent, and refuses anything else', () => {
    const args = (v?: string) => parseArgs(['eval', ...(v === undefined ? [] : ['--constrain-replies', v])], { eval: EVAL_FLAGS });
    expect(onOffFlag(args('on'), 'constrain-replies', false)).toBe(true);
    expect(onOffFlag(args('off'), 'constrain-replies', true)).toBe(false);
    expect(onOffFlag(args(), 'constrain-replies', true)).toBe(true);
    expect(() => onOffFlag(args('no'), 'constrain-replies', true)).toThrow(new UsageError("--constrain-replies must be on or off, got 'no'"));
    expect(EVAL_USAGE).toContain('--constrain-replies on|off');
  });

  it('cli train takes it for a benchmark run, refuses a bad value and refuses it for the toy', async () => {
    expect(TRAIN_USAGE).toContain('--constrain-replies on|off');
    const dir = mkdtempSync(join(tmpdir(), 'agentflow-constrain-'));
    const data = join(dir, 'd.jsonl');
    writeFileSync(data, '{"pid": "1", "query": "q", "answer": "a"}\n');
    const bad = await runCli(['train', '--model', TINY, '--data', data, '--out', join(dir, 'out'), '--constrain-replies', 'maybe']);
    expect(bad.code, bad.stderr).toBe(2);
    expect(bad.stderr).toMatch(/--constrain-replies must be on or off, got 'maybe'/);
    const toy = await runCli(['train', '--task', 'toy', '--out', join(dir, 'toy'), '--constrain-replies', 'off']);
    expect(toy.code, toy.stderr).toBe(2);
    expect(toy.stderr).toMatch(/--constrain-replies does not apply to --task toy/);
  }, 120_000);

  it("turns the rollouts' reply schemas off only when the budget says so", () => {
    expect(resolveConfig(rolloutAgentConfig(DEFAULT_AGENT_BUDGET, 1, 0)).constrainReplies).toBe(true);
    expect(resolveConfig(rolloutAgentConfig({ ...DEFAULT_AGENT_BUDGET, constrainReplies: true }, 1, 0)).constrainReplies).toBe(true);
    expect(resolveConfig(rolloutAgentConfig({ ...DEFAULT_AGENT_BUDGET, constrainReplies: false }, 1, 0)).constrainReplies).toBe(false);
  });
});
