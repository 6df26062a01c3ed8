import { describe, expect, it } from 'vitest';
import { droppedStepText } from '../controllers/training/training-runner';
import { noSignalText, trainingStatusText } from './training-status';

describe('trainingStatusText', () => {
  it('says where the run stands as a sentence, with its length when known', () => {
    expect(trainingStatusText('idle', undefined, 40)).toBe('Not started.');
    expect(trainingStatusText('running', undefined, 40)).toBe('Running: step 0 of 40');
    expect(trainingStatusText('running', { step: 10, reward: 0.756 }, 40)).toBe('Running: step 10 of 40, reward 0.76');
    expect(trainingStatusText('paused', { step: 17, reward: 0.5 }, 40)).toBe('Paused at step 17 of 40, reward 0.50');
    expect(trainingStatusText('done', { step: 12, reward: 1 }, 12)).toBe('Done: step 12 of 12, reward 1.00');
    expect(trainingStatusText('error', { step: 3, reward: 0 }, null)).toBe('Failed at step 3, reward 0.00');
  });

  it('calls a run that was running when the page closed interrupted, and says Resume continues it', () => {
    expect(trainingStatusText('paused', { step: 530, reward: 0.5 }, 5000, true)).toBe('Interrupted at step 530 of 5000, reward 0.50 (the page closed while it ran) — Resume continues it from its last checkpoint.');
    expect(trainingStatusText('done', { step: 5, reward: 1 }, 5, true)).toBe('Done: step 5 of 5, reward 1.00');
  });

  it('says which step a pause cut short and that its rollouts were dropped', () => {
    expect(droppedStepText(3, 'swap', 5)).toBe('Step 3 was cut short by the model switch: the 5 rollouts it had played were dropped, and Resume plays step 3 again from its start.');
    expect(droppedStepText(1, 'pause', null)).toBe('Step 1 was cut short by Pause: its rollouts so far were dropped, and Resume plays step 1 again from its start.');
  });
});

describe('noSignalText', () => {
  it('says when steps, or the whole run, had no reward signal, and why', () => {
    const why = "every group's rewards were equal (6 all 0): no update";
    expect(noSignalText([{ step: 1 }, { step: 2 }])).toBeNull();
    expect(noSignalText([{ step: 1 }, { step: 2, noSignal: why }])).toEqual({ run: false, text: `1 of 2 steps had no reward signal (step 2: ${why}).` });
    const none = noSignalText([{ step: 1, noSignal: why }, { step: 2, noSignal: why }]);
    expect(none?.run).toBe(true);
    expect(none?.text).toBe(`This run learned nothing: all 2 steps had no reward signal or skipped the update (step 1: ${why}). Its result is the adapter it started from, untouched by any reward.`);
    expect(noSignalText([])).toBeNull();
  });
});
