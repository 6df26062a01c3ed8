import { describe, expect, it } from 'vitest';
import { modelNameOf, plannerModelUrl } from './model-loader';

describe('planner model location', () => {
  it('maps repo ids to the hub, keeps URLs, resolves relative paths against the page', () => {
    expect(plannerModelUrl('Qwen/Qwen2.5-0.5B-Instruct')).toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/');
    expect(plannerModelUrl('https://mirror.example/m/q')).toBe('https://mirror.example/m/q/');
    expect(plannerModelUrl('./models/tiny', 'https://site.example/app/sub/index.html')).toBe('https://site.example/app/sub/models/tiny/');
    expect(() => plannerModelUrl('  ')).toThrow(/planner model: give a URL/);
  });
  it('names models by hub repo or folder', () => {
    expect(modelNameOf('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/')).toBe('Qwen2.5-0.5B-Instruct');
    expect(modelNameOf('http://127.0.0.1:9/models/tiny/')).toBe('tiny');
  });
});
