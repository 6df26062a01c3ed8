// The agent's "Constrain replies" switch under the tool switches, in Chromium with real IndexedDB: on by
// default, saved when changed, the same on every switch element of the page, and read back by
// readConstrainReplies (what the chat passes to runAgent as constrainReplies).
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../tools/registry';
import { adderTool } from '../../tests/support/test-tools';
import { readConstrainReplies } from '../controllers/tools/tool-settings';
import type { AgentflowToolSwitches } from './tool-switches';
import './tool-switches';

function mount(registry: ToolRegistry, dbName: string): AgentflowToolSwitches {
  const el = document.createElement('agentflow-tool-switches') as AgentflowToolSwitches;
  el.registry = registry;
  el.dbName = dbName;
  document.body.append(el);
  return el;
}

const box = (el: AgentflowToolSwitches) => el.renderRoot.querySelector<HTMLInputElement>('[data-testid="constrain-replies"]');

describe('constrain replies switch', () => {
  it('is on by default, saves a change, and shows it on every switch element', async () => {
    const db = `constrain-${Math.random().toString(36).slice(2)}`;
    const registry = new ToolRegistry();
    registry.register(adderTool);
    expect(await readConstrainReplies(db)).toBe(true);
    const a = mount(registry, db);
    const b = mount(registry, db);
    await expect.poll(() => box(a)?.checked).toBe(true);
    expect(box(a)!.closest('label')!.textContent).toMatch(/Constrain replies to their JSON shape/);
    box(a)!.click();
    await expect.poll(() => box(b)?.checked).toBe(false);
    await expect.poll(() => readConstrainReplies(db)).toBe(false);
    // A switch made later (after a reload) shows the saved choice.
    const c = mount(registry, db);
    await expect.poll(() => box(c)?.checked).toBe(false);
    box(c)!.click();
    await expect.poll(() => readConstrainReplies(db)).toBe(true);
    for (const el of [a, b, c]) el.remove();
  });
});
