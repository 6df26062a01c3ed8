// The planner at work with the real planner worker (issue 28 item 2), in Chromium on its software GPU: the
// qwen2-tiny fixture with a byte-level tokenizer serves every module. Its random weights write no usable
// plan, which is what a planner that has not learnt the reply format does: the call must still stream in the
// live line (time to first token, a token count that moves, tokens/s), say how long a prompt it reads while
// it waits, and then be listed under "Module calls so far" with its numbers.
import { describe, expect, it } from 'vitest';
import { byteTokenizerConfig, byteTokenizerJson } from '../../tests/support/byte-tokenizer';
import { baseModelView } from '../engine/base-model-view';
import { PlannerClient, RemotePlannerEngine } from '../planner/planner-client';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const text = (el: AgentFlowChat, s: string) => (el.renderRoot.querySelector(s)?.textContent ?? '').replace(/\s+/g, ' ').trim();

async function fixture(file: string): Promise<Uint8Array> {
  const r = await fetch(new URL(`../../../shared/fixtures/qwen2-tiny/${file}`, import.meta.url));
  if (!r.ok) throw new Error(`fixture qwen2-tiny/${file}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

describe('<agentflow-chat> on the planner worker', () => {
  it('streams the planner’s reply with its numbers, and lists the call when its reply cannot be used', async () => {
    const config = JSON.parse(new TextDecoder().decode(await fixture('config.json'))) as Record<string, unknown>;
    // The agent's prompts are a few thousand bytes: a longer context than the fixture's (RoPE has no table).
    const files = { 'config.json': json({ ...config, max_position_embeddings: 4096 }), 'model.safetensors': await fixture('model.safetensors'), 'tokenizer.json': json(byteTokenizerJson()), 'tokenizer_config.json': json(byteTokenizerConfig()) };
    const client = new PlannerClient();
    const el = document.createElement('agentflow-chat');
    const seen: string[] = [];
    const observer = new MutationObserver(() => {
      const now = text(el, '[data-testid="live"]');
      if (now && now !== seen.at(-1)) seen.push(now);
    });
    try {
      const info = await client.load({ kind: 'bytes', files, label: 'qwen2-tiny' }, { maxContext: 4096 });
      const planner = new RemotePlannerEngine(client, info.id, info.maxContext);
      el.dbName = `chat-planner-worker-${Math.random()}`;
      el.maxTurns = 1;
      el.engines = { planner, shared: baseModelView(planner) };
      el.tools = '';
      document.body.append(el);
      await el.updateComplete;
      observer.observe(el.renderRoot, { subtree: true, childList: true, characterData: true });
      const run = el.ask('What is 2+2?');
      // Listed once its step is stored, with the engine's own token count (no ≈) and rate.
      await expect.poll(() => text(el, '[data-testid="live-calls"]'), { timeout: 300_000, interval: 200 }).toMatch(
        /Planning \(turn 1\): \d+\.\d s, first token after \d+\.\d s, [1-9]\d* tokens at \d+(\.\d)? tokens\/s, prompt [1-9][\d,]* tokens( \([\d,]+ reused\))? — its reply could not be used/,
      );
      el.stop();
      await run;
      const planning = seen.filter((t) => t.startsWith('Planning (turn 1)…'));
      // Before its first token: how long a prompt it is reading.
      expect(planning.some((t) => /waiting for the first token \(reading a prompt of [1-9][\d,]* tokens\)$/.test(t))).toBe(true);
      // Then its tokens stream: the count moves, with a rate.
      const counts = new Set(planning.map((t) => /first token after \d+\.\d s · (\d+) tokens?, \d+(\.\d)? tokens\/s/.exec(t)?.[1]).filter(Boolean));
      expect(counts.size).toBeGreaterThan(2);
    } finally {
      observer.disconnect();
      el.remove();
      client.terminate();
    }
  });
});
