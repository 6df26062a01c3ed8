// Replays the agent-planner e2e scenario (tests/e2e/pages/agent-planner-scenario.ts) in Node on Dawn: the
// qwen2-tiny fixture with its adapter, the scenario's tokenizer with phrase tokens, the same config and tools,
// so that a seed search runs without Chromium. The e2e draws the same tokens where both platforms' logits
// agree to well within the gap between a uniform and its nearest CDF step, so confirm a found set there.
//
//   source scripts/test-env.sh && npx tsx bench/agent-planner-seeds.ts [--seeds a,p,e,v,g] [--vary p,e --from N --to M]
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runAgent, type AgentRunResult } from '../src/agent/loop';
import type { StepRecord } from '../src/store/records';
import { requestGpu } from '../src/gpu/device';
import { directorySource } from '../src/io/sources';
import { PlannerEngine } from '../src/engine/planner-engine';
import { createNodePythonTool } from '../src/tools/python-node';
import { FIRST_PHRASE_ID, LAST_PHRASE_ID, MAX_NEW_TOKENS, MAX_TURNS, QUERY, SEEDS, plannerConfig, plannerTokenizerConfig, plannerTokenizerJson, reverseTool } from '../tests/e2e/pages/agent-planner-scenario';

type Seeds = [number, number, number, number, number];
/** A step's data as plain fields (the checks below read fields of several kinds). */
const data = (s: StepRecord) => s.data as unknown as Record<string, unknown>;
const TINY = resolve(process.cwd(), '../shared/fixtures/qwen2-tiny');

/** What the e2e test asserts of the first run that depends on the seeds; an empty list: all of it holds. */
export function missingOutcomes(r: AgentRunResult, plannerTokens: number[][]): string[] {
  const miss: string[] = [];
  const steps = r.steps;
  if (r.error || r.status !== 'done') miss.push(`status ${r.status} ${r.error ?? ''}`);
  if (!['verifier', 'turn-budget'].includes(r.stopReason)) miss.push(`stopReason ${r.stopReason}`);
  if (steps.length <= 3) miss.push('3 steps or fewer');
  for (const s of steps) {
    const d = data(s);
    if (s.kind === 'error' || (s.kind === 'executor' && d.raw === undefined)) continue;
    const n = d.completionTokenCount as number;
    if (!(n > 0 && n <= MAX_NEW_TOKENS)) miss.push(`${s.kind}@${s.turn}: ${n} tokens`);
  }
  const plannerSteps = steps.filter((s) => s.kind === 'planner' || (s.kind === 'error' && (data(s)).module === 'planner'));
  plannerSteps.forEach((s, i) => {
    const phrase = (plannerTokens[i] ?? []).some((t) => t >= FIRST_PHRASE_ID && t <= LAST_PHRASE_ID);
    if (phrase !== (s.kind === 'planner')) miss.push(`planner@${s.turn}: parsed ${s.kind === 'planner'}, phrase token ${phrase}`);
  });
  const ex = steps.filter((s) => s.kind === 'executor').map((s) => data(s));
  for (const d of ex) {
    if (d.ok !== true && !/^tool-calling error: /.test(String(d.error))) miss.push(`executor error ${String(d.error)}`);
    if (d.ok === true && d.toolName === 'python' && (d.result !== 'olleh' || (d.args as { code?: unknown } | null)?.code !== "print('hello'[::-1])")) miss.push('python ran other code');
  }
  if (!ex.some((d) => d.toolName === 'python' && d.ok === true)) miss.push('no python success');
  if (!ex.some((d) => d.ok === false && d.errorKind === 'bad-arguments')) miss.push('no bad-arguments');
  if (!steps.some((s) => s.kind === 'verifier' && (data(s)).parseMethod === 'default' && (data(s)).verdict === 'CONTINUE')) miss.push('no default CONTINUE verifier');
  return miss;
}

function describe(r: AgentRunResult): string {
  return r.steps
    .map((s) => {
      const d = data(s);
      const bits = [s.kind + '@' + s.turn, d.toolName, d.ok, d.errorKind, d.parseMethod, d.verdict].filter((x) => x !== undefined && x !== null);
      return bits.join(' ') + ' ' + JSON.stringify(d.raw ?? d.text ?? d.message ?? '').slice(0, 100);
    })
    .join('\n  ');
}

async function main() {
  const argv = process.argv.slice(2);
  const flag = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const base = (flag('--seeds')?.split(',').map(Number) ?? [...SEEDS]) as Seeds;
  const vary = (flag('--vary') ?? '').split(',').filter(Boolean).map((m) => ['a', 'p', 'e', 'v', 'g'].indexOf(m));
  if (vary.some((i) => i < 0)) throw new Error('--vary: a comma list of a, p, e, v, g');
  const from = Number(flag('--from') ?? 1);
  const to = Number(flag('--to') ?? from);
  const candidates: Seeds[] = [];
  if (!vary.length) candidates.push(base);
  else for (let s = from; s <= to; s++) {
    // The varied positions get s, s+1, ... (distinct seeds per module, as the original set had).
    const c = [...base] as Seeds;
    vary.forEach((i, k) => (c[i] = s + k));
    candidates.push(c);
  }

  const dir = mkdtempSync(join(tmpdir(), 'agent-planner-seeds-'));
  for (const f of ['config.json', 'model.safetensors']) symlinkSync(join(TINY, f), join(dir, f));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(plannerTokenizerJson()));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(plannerTokenizerConfig()));
  const ctx = await requestGpu();
  const m = await PlannerEngine.loadModel(ctx, directorySource(dir), { maxContext: 2048, name: 'qwen2-tiny-agent' });
  rmSync(dir, { recursive: true, force: true });
  const engine = m.engine!;
  await engine.loadAdapter('fixture', directorySource(join(TINY, 'adapter')));
  engine.setActiveAdapter('fixture');
  const python = createNodePythonTool({ maxRunMs: 60_000 });
  console.log(`f16 ${ctx.caps.f16}`);
  try {
    for (const seeds of candidates) {
      const t0 = performance.now();
      const plannerTokens: number[][] = [];
      const r = await runAgent({
        conversationId: `seeds-${seeds.join('-')}`,
        query: QUERY,
        tools: [reverseTool, python],
        engines: { planner: engine, shared: engine },
        config: plannerConfig(seeds),
        onPlannerCall: (c) => void plannerTokens.push(c.result.tokens),
      });
      const miss = missingOutcomes(r, plannerTokens);
      console.log(`[${seeds.join(',')}] ${miss.length ? 'missing: ' + miss.join('; ') : 'ALL OUTCOMES'} (${r.steps.length} steps, ${r.turns}/${MAX_TURNS} turns, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
      if (!miss.length || argv.includes('--verbose')) console.log('  ' + describe(r));
    }
  } finally {
    python.dispose();
    m.runtime.destroy();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
