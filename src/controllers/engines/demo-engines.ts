// Engines for running the page without any model: the agent helper's scripted demo, plus a reply for
// direct questions (the base generator tool) so every built-in offline tool gives an answer.
import { demoScript } from '../../agent/demo';
import type { AgentEngines } from '../../agent/loop';
import { ScriptedEngine } from '../../agent/scripted-engine';

/** Whether engines are (or include) scripted ones such as these: their text must be labelled as scripted. */
export { isScripted } from '../../agent/engines-used';

export function scriptedDemoEngines(): AgentEngines {
  const script = demoScript();
  return {
    planner: new ScriptedEngine({ planner: script.planner }, 'planner:demo'),
    shared: new ScriptedEngine(
      {
        ...script,
        planner: undefined,
        other: [(m) => `(scripted demo reply, no model loaded) You asked: ${m.filter((x) => x.role === 'user').at(-1)?.content ?? ''}`],
      },
      'shared:demo',
    ),
  };
}
