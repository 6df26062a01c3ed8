// The ChatEngine side of the web-llm engine, over a scripted stand-in for web-llm's worker client that
// behaves as web-llm documents: a stream of OpenAI chunks, finish_reason 'abort' after interruptGenerate.
import { ModelType, postInitAndCheckFieldsChatCompletion, prebuiltAppConfig, type ChatCompletionChunk, type ChatCompletionRequestStreaming, type ModelRecord, type WebWorkerMLCEngine } from '@mlc-ai/web-llm';
import { watchWorker, WorkerGoneError } from '../../util/worker-watch';
import { describe, expect, it } from 'vitest';
import { classifyLoadError, toRequest, WebLlmChatEngine, WebLlmEngineError, withModelUrls } from './webllm-engine';

function chunk(content: string | undefined, finish: ChatCompletionChunk.Choice['finish_reason'] = null): ChatCompletionChunk {
  return { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta: content === undefined ? {} : { content, role: 'assistant' }, finish_reason: finish }] } as ChatCompletionChunk;
}

/** Streams `pieces` one per tick; after interruptGenerate it ends the stream with finish_reason 'abort'. */
class ScriptedMlc {
  requests: ChatCompletionRequestStreaming[] = [];
  interrupted = false;
  unloaded = false;
  constructor(private readonly pieces: string[], private readonly finish: 'stop' | 'length' = 'stop') {}
  interruptGenerate() {
    this.interrupted = true;
  }
  async unload() {
    this.unloaded = true;
  }
  async chatCompletion(req: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>> {
    this.requests.push(req);
    this.interrupted = false;
    const self = this;
    return (async function* () {
      for (const p of self.pieces) {
        await new Promise((r) => setTimeout(r, 1));
        if (self.interrupted) {
          yield chunk(undefined, 'abort');
          return;
        }
        yield chunk(p);
      }
      yield chunk(undefined, self.finish);
    })();
  }
}

function engine(mlc: ScriptedMlc) {
  let terminated = 0;
  const worker = Object.assign(new EventTarget(), { terminate: () => terminated++ }) as unknown as Worker;
  const e = new WebLlmChatEngine(mlc as unknown as WebWorkerMLCEngine, watchWorker(worker, 'web-llm'), { modelId: 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC' });
  return { e, worker, terminated: () => terminated };
}

describe('WebLlmChatEngine', () => {
  it('fails a call at once when its worker dies mid-answer, and every later call, naming the worker', async () => {
    // A stream that never ends: web-llm's answer from a worker that died.
    const mlc = { chatCompletion: async () => ({ async *[Symbol.asyncIterator]() { await new Promise(() => undefined); } }), interruptGenerate: () => undefined, unload: async () => undefined };
    const { e, worker, terminated } = engine(mlc as unknown as ScriptedMlc);
    const pending = e.stream([{ role: 'user', content: 'hi' }]).result;
    worker.dispatchEvent(Object.assign(new Event('error'), { message: 'Out of memory' }));
    await expect(pending).rejects.toThrow(new WorkerGoneError('web-llm', 'an error: Out of memory'));
    await expect(e.stream([{ role: 'user', content: 'again' }]).result).rejects.toBeInstanceOf(WorkerGoneError);
    expect(terminated()).toBe(1);
  });

  it('streams the pieces and returns their concatenation', async () => {
    const mlc = new ScriptedMlc(['Hel', 'lo', ' world']);
    const { e } = engine(mlc);
    const seen: string[] = [];
    const stream = e.stream([{ role: 'user', content: 'hi' }], { maxNewTokens: 8 });
    for await (const p of stream) seen.push(p);
    const r = await stream.result;
    expect(seen).toEqual(['Hel', 'lo', ' world']);
    expect(r).toMatchObject({ text: 'Hello world', finishReason: 'stop', promptTokens: [], tokens: [], logprobs: [], adapterId: null });
    expect(e.id).toBe('web-llm:Qwen2.5-1.5B-Instruct-q4f32_1-MLC');
    expect(r.timings.prefillMs).toBeGreaterThanOrEqual(0);
    expect(r.timings.decodeMs).toBeGreaterThanOrEqual(0);
  });

  it('reports length when web-llm stops at max_tokens', async () => {
    const r = await engine(new ScriptedMlc(['a', 'b'], 'length')).e.stream([{ role: 'user', content: 'x' }], { maxNewTokens: 2 }).result;
    expect(r.finishReason).toBe('length');
  });

  it('interrupts web-llm when the signal aborts, returning the text so far', async () => {
    const mlc = new ScriptedMlc(['one', ' two', ' three', ' four']);
    const { e } = engine(mlc);
    const ac = new AbortController();
    const stream = e.stream([{ role: 'user', content: 'count' }], { signal: ac.signal });
    for await (const p of stream) if (p === ' two') ac.abort();
    const r = await stream.result;
    expect(r.text).toBe('one two');
    expect(r.finishReason).toBe('abort');
    const pre = new AbortController();
    pre.abort();
    expect((await e.stream([{ role: 'user', content: 'x' }], { signal: pre.signal }).result).finishReason).toBe('abort');
    expect(mlc.requests).toHaveLength(1);
  });

  it('runs one generation at a time', async () => {
    const mlc = new ScriptedMlc(['x', 'y']);
    const { e } = engine(mlc);
    const order: string[] = [];
    const read = async (name: string) => {
      for await (const p of e.stream([{ role: 'user', content: name }])) order.push(`${name}${p}`);
    };
    await Promise.all([read('a'), read('b')]);
    expect(order).toEqual(['ax', 'ay', 'bx', 'by']);
  });

  it('wraps a generation failure and refuses to run after dispose', async () => {
    const mlc = new ScriptedMlc([]);
    mlc.chatCompletion = async () => {
      throw new Error('ContextWindowSizeExceededError: prompt too long');
    };
    const { e, terminated } = engine(mlc);
    await expect(e.stream([{ role: 'user', content: 'x' }]).result).rejects.toThrow(/web-llm generation with 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC' failed: .*prompt too long/);
    await e.dispose();
    expect(mlc.unloaded).toBe(true);
    expect(terminated()).toBe(1);
    await expect(e.stream([{ role: 'user', content: 'x' }]).result).rejects.toBeInstanceOf(WebLlmEngineError);
  });
});

describe('web-llm request mapping', () => {
  it('maps GenerateOptions to the OpenAI request, with JSON mode', () => {
    const req = toRequest([{ role: 'system', content: 's' }, { role: 'user', content: 'u' }], { maxNewTokens: 64, temperature: 0, topP: 0.9, seed: 3, stop: ['\n\n'], json: true, topK: 5 });
    expect(req).toEqual({
      messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }],
      stream: true,
      max_tokens: 64,
      temperature: 0,
      top_p: 0.9,
      seed: 3,
      stop: ['\n\n'],
      response_format: { type: 'json_object' },
    });
    expect(toRequest([{ role: 'user', content: 'u' }], {})).toEqual({ messages: [{ role: 'user', content: 'u' }], stream: true });
  });

  it("sends a reply's JSON Schema as web-llm 0.2.86 reads one, which its own request check accepts", async () => {
    const schema = JSON.stringify({ type: 'object', properties: { verdict: { type: 'string', enum: ['STOP', 'CONTINUE'] } }, required: ['verdict'] });
    const req = toRequest([{ role: 'user', content: 'u' }], { json: true, jsonSchema: schema, temperature: 0 });
    // The schema wins over plain JSON mode; web-llm compiles response_format.schema when the type is json_object.
    expect(req.response_format).toEqual({ type: 'json_object', schema });
    const id = 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC';
    expect(() => postInitAndCheckFieldsChatCompletion(structuredClone(req), id, ModelType.LLM)).not.toThrow();
    // What OpenAI's API would take is refused by web-llm's check once a schema rides along.
    expect(() => postInitAndCheckFieldsChatCompletion({ ...req, response_format: { type: 'json_schema', schema } as unknown as typeof req.response_format }, id, ModelType.LLM)).toThrow();
    expect(() => toRequest([{ role: 'user', content: 'u' }], { jsonSchema: '{"type": ' })).toThrow(/jsonSchema is not JSON/);
    expect(() => toRequest([{ role: 'user', content: 'u' }], { jsonSchema: '[1]' })).toThrow(/jsonSchema must be a JSON Schema object, got an array/);

    // The engine sends it with the call, and a bad schema fails the call as a generation error naming it.
    const mlc = new ScriptedMlc(['{"verdict": "STOP"}']);
    const { e } = engine(mlc);
    expect((await e.stream([{ role: 'user', content: 'u' }], { jsonSchema: schema }).result).text).toBe('{"verdict": "STOP"}');
    expect(mlc.requests[0].response_format).toEqual({ type: 'json_object', schema });
    await expect(e.stream([{ role: 'user', content: 'u' }], { jsonSchema: 'nope' }).result).rejects.toThrow(/web-llm generation with .* failed: GenerateOptions.jsonSchema is not JSON/);
  });

  it('points only the chosen record at the mirrors', () => {
    const id = 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC';
    const cfg = withModelUrls(prebuiltAppConfig, id, 'https://mirror.example/models/', 'https://mirror.example/libs/');
    const rec = cfg.model_list.find((r) => r.model_id === id) as ModelRecord;
    const orig = prebuiltAppConfig.model_list.find((r) => r.model_id === id) as ModelRecord;
    expect(rec.model).toBe(`https://mirror.example/models/${id}`);
    expect(rec.model_lib).toBe(`https://mirror.example/libs/${orig.model_lib.split('/').pop()}`);
    expect(cfg.model_list.filter((r, i) => r !== prebuiltAppConfig.model_list[i]).map((r) => r.model_id)).toEqual([id]);
    expect(() => withModelUrls(prebuiltAppConfig, id, 'https://mirror.example/models')).toThrow(/modelBaseUrl must end with '\/'/);
  });

  it('classifies load failures', () => {
    const rec = prebuiltAppConfig.model_list.find((r) => r.model_id === 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC') as ModelRecord;
    const dl = classifyLoadError(new TypeError("Failed to execute 'add' on 'Cache': Request failed"), rec);
    expect(dl.code).toBe('model-download');
    expect(dl.url).toBe(rec.model);
    expect(dl.message).toContain(`The model '${rec.model_id}' could not be downloaded from ${rec.model}`);
    expect(classifyLoadError(new Error('WebGPU is not supported in your current environment'), rec).code).toBe('webgpu-unavailable');
    const other = classifyLoadError(new Error('Out of memory while allocating KV cache'), rec);
    expect(other.code).toBe('load');
    expect(other.message).toMatch(/could not load 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC': Out of memory/);
  });
});
