// A model web-llm has cached, loaded while offline: web-llm keeps mlc-chat-config.json, tensor-cache.json,
// the shards and tokenizer.json, but never tokenizer_config.json, whose download then fails. The planner
// takes its chat template from mlc-chat-config.json's conv_template instead, and only then.
// The model is the tiny MLC fixture, served by urlSource through a stubbed fetch (as a URL source it cannot
// list files, so only those mlc-chat-config.json lists are asked for); its chat config gets Qwen2.5's
// full conv_template, and tokenizer.json is the byte-level one with Qwen's chat special tokens.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer.ts';
import { loadCheckpoint } from './load-checkpoint.ts';
import { urlSource } from '../io/sources.ts';
import { MLC_MANIFEST_05B, TINY_MLC } from '../io/test-fixtures.ts';
import { PlannerEngine, plannerTokenizer } from './planner-engine.ts';
import type { ChatMessage } from './chat-engine.ts';

const BASE = 'https://hub.example/mlc-ai/Tiny-q4f16_1-MLC/resolve/main/';
const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8'));
const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const QWEN_CONV = readJson(join(MLC_MANIFEST_05B, 'mlc-chat-config.json')).conv_template;
const TINY_CHAT = readJson(join(TINY_MLC, 'mlc-chat-config.json'));
const WITH_CONV = { ...TINY_CHAT, tokenizer_files: ['tokenizer.json', 'tokenizer_config.json'], conv_template: QWEN_CONV };
// The tiny fixture's own conv_template is only {name: 'qwen2'}: nothing to render.
const NAME_ONLY = { ...WITH_CONV, conv_template: TINY_CHAT.conv_template };

type Served = Uint8Array | 'offline' | undefined;

/** urlSource over the tiny MLC build; `tokenizerConfig` is what a request for tokenizer_config.json gets. */
function folder(chatConfig: unknown, tokenizerConfig: Served) {
  const files: Record<string, Served> = {
    'mlc-chat-config.json': json(chatConfig),
    'tensor-cache.json': readFileSync(join(TINY_MLC, 'tensor-cache.json')),
    'params_shard_0.bin': readFileSync(join(TINY_MLC, 'params_shard_0.bin')),
    'tokenizer.json': json(byteTokenizerJson()),
    'tokenizer_config.json': tokenizerConfig,
  };
  const asked: string[] = [];
  const source = urlSource(BASE, {
    cacheName: null,
    fetch: async (u) => {
      const name = String(u).slice(BASE.length);
      asked.push(name);
      const f = files[name];
      // What fetch does offline or when the host is blocked: it rejects; urlSource turns that into a SourceError.
      if (f === 'offline') throw new TypeError('Failed to fetch');
      return f ? new Response(f as Uint8Array<ArrayBuffer>) : new Response('not found', { status: 404 });
    },
  });
  return { source, asked };
}

const SYSTEM_USER: ChatMessage[] = [
  { role: 'system', content: 'You are the Planner.' },
  { role: 'user', content: 'Query: 2+2?' },
];
const CHATML_PROMPT = '<|im_start|>system\nYou are the Planner.<|im_end|>\n<|im_start|>user\nQuery: 2+2?<|im_end|>\n<|im_start|>assistant\n';
const CONV_DEFAULT_SYSTEM = '<|im_start|>system\nA conversation between a user and an LLM-based AI assistant. The assistant gives helpful and honest answers.<|im_end|>\n';

describe('an MLC folder whose tokenizer_config.json cannot be downloaded', () => {
  it("loads with the chat template derived from mlc-chat-config.json's conv_template, and the planner still stops at <|im_end|> and <|endoftext|>", async () => {
    const { source, asked } = folder(WITH_CONV, 'offline');
    const ck = await loadCheckpoint(source);
    expect(asked).toContain('tokenizer_config.json');
    expect(ck.format).toBe('mlc-q4f16_1');
    expect(ck.tokenizer.tokenizerConfig).toBeNull();
    expect(ck.tokenizer.chatTemplateSource).toBe('mlc-chat-config.json conv_template');

    const { tokenizer, extraEos, chatTemplateSource } = plannerTokenizer(ck, source.label);
    expect(chatTemplateSource).toBe('mlc-chat-config.json conv_template');
    expect(tokenizer.renderChat(SYSTEM_USER, { addGenerationPrompt: true })).toBe(CHATML_PROMPT);
    // The chat markers encode as the special tokens, not as their bytes.
    const ids = tokenizer.encodeChat(SYSTEM_USER, { addGenerationPrompt: true });
    expect(ids.filter((id) => id === BYTE_SPECIALS.im_start)).toHaveLength(3);
    expect(ids.filter((id) => id === BYTE_SPECIALS.im_end)).toHaveLength(2);

    // Without tokenizer_config.json's eos_token the stop ids come from the chat config's eos_token_id (319)
    // and the chat end tokens PlannerEngine looks up in tokenizer.json. The engine only reads the runtime's
    // config and checks the batcher's runtime, so a stand-in runtime will do.
    const runtime = { config: ck.config };
    const engine = new PlannerEngine(runtime as never, tokenizer, 'tiny', extraEos, { runtime } as never, chatTemplateSource);
    expect(engine.chatTemplateSource).toBe('mlc-chat-config.json conv_template');
    expect([...engine.stopIds].sort((a, b) => a - b)).toEqual([BYTE_SPECIALS.endoftext, BYTE_SPECIALS.im_end, 319]);
    ck.release();
  });

  it('fails with the download error when the conv_template is only a name', async () => {
    const { source } = folder(NAME_ONLY, 'offline');
    await expect(loadCheckpoint(source)).rejects.toThrow(`download of ${BASE}tokenizer_config.json failed: the server could not be reached, or it does not let this page read the file (Failed to fetch)`);
  });
});

describe("where an MLC folder's chat template comes from", () => {
  it("keeps tokenizer_config.json's chat_template whenever it has one", async () => {
    const { source } = folder(WITH_CONV, json(byteTokenizerConfig()));
    const ck = await loadCheckpoint(source);
    expect(ck.tokenizer.chatTemplateSource).toBe('tokenizer_config.json');
    const { tokenizer } = plannerTokenizer(ck, source.label);
    // byteTokenizerConfig's ChatML template adds no default system prompt; the conv_template would.
    expect(tokenizer.renderChat([{ role: 'user', content: 'hi' }])).toBe('<|im_start|>user\nhi<|im_end|>\n');
  });

  it('derives the template when tokenizer_config.json is missing or has no chat_template', async () => {
    const { chat_template: _, ...noTemplate } = byteTokenizerConfig() as Record<string, unknown>;
    for (const served of [undefined, json(noTemplate)]) {
      const { source } = folder(WITH_CONV, served);
      const ck = await loadCheckpoint(source);
      expect(ck.tokenizer.chatTemplateSource).toBe('mlc-chat-config.json conv_template');
      const { tokenizer } = plannerTokenizer(ck, source.label);
      // Without a system message, the conv_template's own system_message (web-llm's rule).
      expect(tokenizer.renderChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true })).toBe(
        `${CONV_DEFAULT_SYSTEM}<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n`,
      );
    }
  });

  it('loads without a template when there is none anywhere, and the planner then names every place it looked', async () => {
    const { source } = folder(NAME_ONLY, undefined);
    const ck = await loadCheckpoint(source);
    expect(ck.tokenizer.chatTemplate).toBeNull();
    expect(ck.tokenizer.chatTemplateSource).toBeNull();
    expect(() => plannerTokenizer(ck, source.label)).toThrow(
      /has no chat template: tokenizer_config\.json has no chat_template \(or is not there\) and there is no chat_template\.jinja, and mlc-chat-config\.json's conv_template cannot stand in \(mlc-chat-config\.json: conv_template only names a template \("qwen2"\)/,
    );
  });
});
