// The qwen2-tiny fixture as a chat model on disk, for tests that load it the way a user's model is loaded
// (the CLI, the hub server the app downloads from).
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { byteTokenizerConfig, byteTokenizerJson } from './byte-tokenizer';
import { TINY } from './qwen2-fixture';

/**
 * A folder holding the qwen2-tiny fixture as a chat model: its weights (linked), its config with a longer
 * context (the agent's prompts, tool cards included, are ~2k bytes with a byte tokenizer; RoPE has no table,
 * so a longer context only costs KV cache) and the byte-level tokenizer with Qwen's chat template.
 */
export function tinyChatModelDir(positions = 4096): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentflow-tiny-chat-'));
  const config = JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: positions }));
  symlinkSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  return dir;
}
