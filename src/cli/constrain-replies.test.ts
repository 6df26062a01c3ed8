// `--constrain-replies on|off` (cli eval, cli train) reaches the agent loop's AgentConfig.constrainReplies
// through the rollout budget and the evaluation settings; anything but on or off is refused, naming the flag.
import { describe, expect, it } from 'vitest';
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

  it("turns the rollouts' reply schemas off only when the budget says so", () => {
    expect(resolveConfig(rolloutAgentConfig(DEFAULT_AGENT_BUDGET, 1, 0)).constrainReplies).toBe(true);
    expect(resolveConfig(rolloutAgentConfig({ ...DEFAULT_AGENT_BUDGET, constrainReplies: true }, 1, 0)).constrainReplies).toBe(true);
    expect(resolveConfig(rolloutAgentConfig({ ...DEFAULT_AGENT_BUDGET, constrainReplies: false }, 1, 0)).constrainReplies).toBe(false);
  });
});
