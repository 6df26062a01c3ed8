import { describe, expect, it } from 'vitest';
import { modelNameOf, plannerModelUrl } from './model-loader';

describe('planner model location', () => {
  it('maps repo ids to the hub, keeps URLs, resolves relative paths against the page', () => {
    expect(plannerModelUrl('Qwen/Qwen2.5-0.5B-Instruct')).toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/');
    expect(plannerModelUrl('https://mirror.example/m/q')).toBe('https://mirror.example/m/q/');
    expect(plannerModelUrl('./models/tiny', 'https://site.example/app/sub/index.html')).toBe('https://site.example/app/sub/models/tiny/');
    expect(() => plannerModelUrl('  ')).toThrow(/planner model: give a URL/);
    expect(plannerModelUrl('/models/tiny', 'https://site.example/app/')).toBe('https://site.example/models/tiny/');
    // A hub page URL is the repo.
    expect(plannerModelUrl('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct')).toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/');
    expect(plannerModelUrl('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/tree/main')).toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/');
  });
  it('refuses what is neither a repo id nor a URL, before anything is fetched from the page\'s own origin', () => {
    for (const bad of ['Qwen2.5-0.5B-Instruct', 'Qwen/Qwen2.5 0.5B', 'Qwen/Qwen2.5/extra', 'hf.co/Qwen/x', '.hidden/x']) {
      expect(() => plannerModelUrl(bad, 'https://site.example/app/'), bad).toThrow(/is neither a Hugging Face repo id \(organisation\/name, e\.g\. Qwen\/Qwen2\.5-0\.5B-Instruct\) nor a URL/);
    }
    expect(() => plannerModelUrl('https://exa mple.org/x')).toThrow("planner model: 'https://exa mple.org/x' is not a valid URL");
  });
  it('names models by hub repo or folder', () => {
    expect(modelNameOf('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/main/')).toBe('Qwen2.5-0.5B-Instruct');
    expect(modelNameOf('http://127.0.0.1:9/models/tiny/')).toBe('tiny');
  });
});
