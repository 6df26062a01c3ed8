// <agentflow-chat> when a worker behind its engines dies (#18.3), in Chromium: the question fails at once with
// the worker's name and a "Reload the models" action, no later question is started on the dead engines, Stop
// ends a call that never answers, and the next question on working engines is answered.
import { describe, expect, it } from 'vitest';
import { ProbeEngine, type ProbeReplyFn } from '../agent/probe-engine';
import type { ChatEngine, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { WorkerGoneError } from '../util/worker-watch';
import './agentflow-chat';
import type { AgentFlowChat } from './agentflow-chat';

/** A planner whose calls never answer, until kill() makes its "worker" die under them. */
class DyingEngine implements ChatEngine {
  readonly id = 'planner:dying';
  gone: Error | null = null;
  calls = 0;
  private fail: Array<(e: Error) => void> = [];
  stream(): ChatStream {
    this.calls++;
    return chatStream(() => (this.gone ? Promise.reject(this.gone) : new Promise<GenerationResult>((_, reject) => this.fail.push(reject))));
  }
  kill(): void {
    this.gone = new WorkerGoneError('planner', 'an error: RangeError: out of memory');
    for (const f of this.fail) f(this.gone);
  }
}

const byCall: ProbeReplyFn = (module) => {
  if (module === 'planner') return JSON.stringify({ justification: 'j', context: '', sub_goal: 'Answer directly', tool_name: 'base_generator' });
  if (module === 'verifier') return '{"verdict": "STOP"}';
  if (module === 'generator') return '<answer>forty-two</answer>';
  return 'forty-two';
};

const shadowText = (el: AgentFlowChat, selector: string) => el.renderRoot.querySelector(selector)?.textContent ?? '';

async function mount(engines: { planner: ChatEngine; shared: ChatEngine }, loadModelAction?: () => void): Promise<AgentFlowChat> {
  const el = document.createElement('agentflow-chat') as AgentFlowChat;
  el.dbName = `chat-lost-${Math.random()}`;
  el.engines = engines;
  el.tools = 'base_generator';
  if (loadModelAction) el.loadModelAction = loadModelAction;
  document.body.append(el);
  await el.updateComplete;
  return el;
}

describe('<agentflow-chat> with a dead worker', () => {
  it('fails the question at once, names the worker, offers a reload and starts nothing more on it', async () => {
    const planner = new DyingEngine();
    let reloads = 0;
    const el = await mount({ planner, shared: new ProbeEngine(byCall, 'shared') }, () => reloads++);
    const lost: string[] = [];
    el.addEventListener('agentflow-engines-lost', (e) => lost.push((e as CustomEvent<{ error: Error }>).detail.error.message));
    const asked = el.ask('What is six times seven?');
    await expect.poll(() => planner.calls).toBeGreaterThan(0);
    planner.kill();
    const r = await asked;
    expect(r?.status).toBe('error');
    await expect.poll(() => shadowText(el, '[part=error]')).toMatch(/the planner worker stopped \(an error: RangeError: out of memory\)/);
    expect(lost).toHaveLength(1);
    const calls = planner.calls;
    expect(await el.ask('And eight times nine?')).toBeNull();
    expect(planner.calls).toBe(calls);
    const reload = el.renderRoot.querySelector<HTMLButtonElement>('[data-testid=reload-models]');
    expect(reload?.textContent).toBe('Reload the models');
    reload!.click();
    await expect.poll(() => reloads).toBe(1);
    el.remove();
  });

  it('lets Stop end a call that never answers, then answers the next question on working engines', async () => {
    const planner = new DyingEngine();
    const el = await mount({ planner, shared: new ProbeEngine(byCall, 'shared') });
    const asked = el.ask('What is six times seven?');
    await expect.poll(() => planner.calls).toBeGreaterThan(0);
    el.stop();
    expect((await asked)?.status).toBe('interrupted');
    el.engines = { planner: new ProbeEngine(byCall, 'planner:probe'), shared: new ProbeEngine(byCall, 'shared') };
    await el.updateComplete;
    const next = await el.ask('What is six times seven, once more?');
    expect(next?.status).toBe('done');
    await expect.poll(() => el.renderRoot.textContent ?? '').toContain('forty-two');
    el.remove();
  });
});
