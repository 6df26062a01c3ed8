// The shared web-llm engine in real Chromium with no model host. Its model and library URLs point at a
// local server that answers every request with 404 (no DNS, no internet), so creating the engine must
// fail fast with a typed error that says the model could not be downloaded and names the model and URL.
import { createServer as createHttpServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerAndChromium } from '../support/dev-browser';

let modelHost: Server;
let missing: string;
const requested: string[] = [];

beforeAll(async () => {
  modelHost = createHttpServer((req, res) => {
    requested.push(req.url ?? '');
    // CORS headers so the page sees a real 404 rather than an opaque network failure.
    res.writeHead(404, { 'content-type': 'text/plain', 'access-control-allow-origin': '*' });
    res.end('no such model file');
  });
  await new Promise<void>((ok) => modelHost.listen(0, '127.0.0.1', ok));
  missing = `http://127.0.0.1:${(modelHost.address() as { port: number }).port}/models/`;
});

afterAll(async () => {
  await new Promise<void>((ok) => (modelHost ? modelHost.close(() => ok()) : ok()));
});

const dev = devServerAndChromium();

interface Outcome {
  name: string;
  code: string;
  modelId: string;
  url?: string;
  message: string;
  f16: boolean;
}

describe('web-llm engine with no model host', () => {
  it('rejects with a model-download error naming the model id and URL, after asking the host for the f32 build', async () => {
    const page = await dev.browser.newPage();
    await page.goto(`${dev.base}/tests/e2e/pages/tools.html`);
    await page.waitForFunction(() => (window as unknown as { pageReady?: boolean }).pageReady === true);
    const out = await page.evaluate(async (missingUrl: string): Promise<Outcome> => {
      const { webllm, gpu } = (window as any).agentflow;
      const { createWebLlmEngine } = webllm;
      const { getGpu } = gpu;
      const f16 = (await getGpu()).caps.f16 as boolean;
      try {
        await createWebLlmEngine({ modelBaseUrl: missingUrl, modelLibBaseUrl: missingUrl });
        return { name: 'none', code: '', modelId: '', message: 'engine was created', f16 };
      } catch (e) {
        const err = e as { name: string; code: string; modelId: string; url?: string; message: string };
        return { name: err.name, code: err.code, modelId: err.modelId, url: err.url, message: err.message, f16 };
      }
    }, missing);
    await page.close();

    // SwiftShader has no shader-f16, so the q4f32 build is chosen before any download.
    expect(out.f16).toBe(false);
    const id = 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC';
    expect(out).toMatchObject({ name: 'WebLlmEngineError', code: 'model-download', modelId: id, url: `${missing}${id}` });
    expect(out.message).toContain(`The model '${id}' could not be downloaded from ${missing}${id}`);
    // web-llm asked our host for the chosen build's chat config (and got the 404 that failed the load).
    expect(requested).toContain(`/models/${id}/resolve/main/mlc-chat-config.json`);
  });
});
