import { prebuiltAppConfig, type AppConfig } from '@mlc-ai/web-llm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_WEBLLM_MODEL, f32Sibling, plannerSourceForWebLlmModel, selectWebLlmModel } from './model-select';

describe('web-llm model selection', () => {
  it('names the f32 sibling of f16 builds only', () => {
    expect(f32Sibling('Qwen2.5-1.5B-Instruct-q4f16_1-MLC')).toBe('Qwen2.5-1.5B-Instruct-q4f32_1-MLC');
    expect(f32Sibling('Qwen2.5-0.5B-Instruct-q0f16-MLC')).toBe('Qwen2.5-0.5B-Instruct-q0f32-MLC');
    expect(f32Sibling('Qwen2.5-1.5B-Instruct-q4f32_1-MLC')).toBeNull();
  });

  it('keeps the q4f16 default where the GPU has shader-f16', () => {
    expect(selectWebLlmModel({ f16: true }, prebuiltAppConfig)).toEqual({ modelId: 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC' });
    expect(DEFAULT_WEBLLM_MODEL).toBe('Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
  });

  it("falls back to the q4f32 build listed in web-llm's own config where shader-f16 is missing", () => {
    const c = selectWebLlmModel({ f16: false }, prebuiltAppConfig);
    expect(c.modelId).toBe('Qwen2.5-1.5B-Instruct-q4f32_1-MLC');
    expect(prebuiltAppConfig.model_list.some((r) => r.model_id === c.modelId)).toBe(true);
    expect(c.fallbackReason).toMatch(/no shader-f16/);
  });

  it('keeps an f32 model as requested on any GPU', () => {
    expect(selectWebLlmModel({ f16: false }, prebuiltAppConfig, 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC')).toEqual({ modelId: 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC' });
  });

  it('treats a record that declares shader-f16 as needing it, whatever its name', () => {
    const cfg: AppConfig = { model_list: [{ model: 'https://x/m', model_id: 'Custom-MLC', model_lib: 'https://x/m.wasm', required_features: ['shader-f16'] }] };
    expect(() => selectWebLlmModel({ f16: false }, cfg, 'Custom-MLC')).toThrow(/'Custom-MLC' needs the WebGPU feature shader-f16/);
    expect(selectWebLlmModel({ f16: true }, cfg, 'Custom-MLC')).toEqual({ modelId: 'Custom-MLC' });
  });

  it('throws naming an unknown model and listing similar ids', () => {
    expect(() => selectWebLlmModel({ f16: true }, prebuiltAppConfig, 'Qwen2.5-1.5B-Instruct-q3f16_1-MLC')).toThrow(
      /'Qwen2.5-1.5B-Instruct-q3f16_1-MLC' is not in the model list; similar ids: .*Qwen2.5-1.5B-Instruct-q4f16_1-MLC/,
    );
  });

  it('refuses an f16 build without an f32 sibling on a GPU without shader-f16', () => {
    const cfg: AppConfig = { model_list: [{ model: 'https://x/m', model_id: 'Tiny-q4f16_1-MLC', model_lib: 'https://x/m.wasm' }] };
    expect(() => selectWebLlmModel({ f16: false }, cfg, 'Tiny-q4f16_1-MLC')).toThrow(/no f32 build of it is listed/);
  });

  describe('the planner reading the shared engine\'s download', () => {
    it('points at the build web-llm loads, in its Cache Storage by default', () => {
      expect(plannerSourceForWebLlmModel({ f16: true }, prebuiltAppConfig, 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC')).toEqual({
        modelId: 'Qwen2.5-0.5B-Instruct-q4f16_1-MLC',
        url: 'https://huggingface.co/mlc-ai/Qwen2.5-0.5B-Instruct-q4f16_1-MLC',
        webllmCache: 'cache',
      });
    });

    it('follows web-llm to the q4f32 build without shader-f16 (the planner would read q4f16, web-llm cannot run it)', () => {
      const s = plannerSourceForWebLlmModel({ f16: false }, prebuiltAppConfig, 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
      expect(s).toMatchObject({ modelId: 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC', url: 'https://huggingface.co/mlc-ai/Qwen2.5-1.5B-Instruct-q4f32_1-MLC' });
      expect(s.fallbackReason).toMatch(/no shader-f16/);
    });

    it("shares web-llm's IndexedDB backend, and nothing with the ones it cannot read", () => {
      const list: AppConfig['model_list'] = [{ model: 'https://x/org/M-q4f16_1-MLC', model_id: 'M-q4f16_1-MLC', model_lib: 'https://x/m.wasm' }];
      expect(plannerSourceForWebLlmModel({ f16: true }, { model_list: list, cacheBackend: 'indexeddb' }, 'M-q4f16_1-MLC').webllmCache).toBe('indexeddb');
      expect(plannerSourceForWebLlmModel({ f16: true }, { model_list: list, cacheBackend: 'opfs' }, 'M-q4f16_1-MLC').webllmCache).toBe('none');
      expect(plannerSourceForWebLlmModel({ f16: true }, { model_list: list }, 'M-q4f16_1-MLC')).toEqual({ modelId: 'M-q4f16_1-MLC', url: 'https://x/org/M-q4f16_1-MLC', webllmCache: 'cache' });
    });

    it('refuses builds the planner cannot read, and unknown ids', () => {
      expect(() => plannerSourceForWebLlmModel({ f16: true }, prebuiltAppConfig, 'Qwen2.5-0.5B-Instruct-q0f16-MLC')).toThrow(/reads web-llm's q4f16_1 and q4f32_1 builds only; 'Qwen2.5-0.5B-Instruct-q0f16-MLC' is neither/);
      expect(() => plannerSourceForWebLlmModel({ f16: true }, prebuiltAppConfig, 'nope-MLC')).toThrow(/'nope-MLC' is not in the model list/);
    });
  });
});
