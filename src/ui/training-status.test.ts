import { describe, expect, it } from 'vitest';
import { trainingStatusText } from './training-status';

describe('trainingStatusText', () => {
  it('says where the run stands as a sentence, with its length when known', () => {
    expect(trainingStatusText('idle', undefined, 40)).toBe('Not started.');
    expect(trainingStatusText('running', undefined, 40)).toBe('Running: step 0 of 40');
    expect(trainingStatusText('running', { step: 10, reward: 0.756 }, 40)).toBe('Running: step 10 of 40, reward 0.76');
    expect(trainingStatusText('paused', { step: 17, reward: 0.5 }, 40)).toBe('Paused at step 17 of 40, reward 0.50');
    expect(trainingStatusText('done', { step: 12, reward: 1 }, 12)).toBe('Done: step 12 of 12, reward 1.00');
    expect(trainingStatusText('error', { step: 3, reward: 0 }, null)).toBe('Failed at step 3, reward 0.00');
  });
});
