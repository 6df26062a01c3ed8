// The shared web-llm engine in Chromium: a worker that cannot start is a typed error, not a hang. (The
// download failure is tested in tests/e2e/tools-webllm.e2e.test.ts, which can run a server that answers
// 404: the browser-mode server answers every unknown path with its HTML page.)
import { describe, expect, it } from 'vitest';
import { createWebLlmEngine, WebLlmEngineError } from '../../src/engine/webllm/webllm-engine';

const MISSING = `${location.origin}/__agentflow_no_model_host__/`;

describe('web-llm engine worker', () => {
  it('rejects with a worker error, not a hang, when the worker script cannot start', async () => {
    const err = await createWebLlmEngine({
      f16: true,
      createWorker: () => new Worker(`${MISSING}missing.worker.js`, { type: 'module' }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebLlmEngineError);
    expect((err as WebLlmEngineError).code).toBe('worker');
    expect((err as WebLlmEngineError).modelId).toBe('Qwen2.5-1.5B-Instruct-q4f16_1-MLC');
  });
});
