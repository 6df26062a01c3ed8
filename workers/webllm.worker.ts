// The shared web-llm engine's worker: web-llm's own handler runs the MLC engine here, off the page's main
// thread, and answers the WebWorkerMLCEngine client in src/engine/webllm/webllm-engine.ts.
import { WebWorkerMLCEngineHandler } from '@mlc-ai/web-llm';

const handler = new WebWorkerMLCEngineHandler();
self.onmessage = (msg: MessageEvent) => handler.onmessage(msg);
