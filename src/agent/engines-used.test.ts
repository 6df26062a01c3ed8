import { describe, expect, it } from 'vitest';
import { baseModelView } from '../engine/base-model-view';
import { describeEngines, enginesUsed } from './engines-used';
import { ScriptedEngine } from './scripted-engine';

describe('enginesUsed', () => {
  it('records a planner serving every module through its base-model view as one engine', () => {
    const planner = new ScriptedEngine({}, 'planner:tiny-chat');
    const used = enginesUsed({ planner, shared: baseModelView(planner) });
    expect(used).toEqual({ planner: 'planner:tiny-chat', shared: 'planner:tiny-chat', scripted: true });
    expect(describeEngines({ ...used, scripted: false })).toBe('planner:tiny-chat (all modules)');
    const two = enginesUsed({ planner, shared: new ScriptedEngine({}, 'web-llm:x') });
    expect(describeEngines({ ...two, scripted: false })).toBe('planner:tiny-chat + web-llm:x');
  });
});
