// A demo of the agent without any model: scripted engines whose replies are built from the prompts they
// get, so the loop runs for any query and any set of tools. Each reply is what a model would have to write;
// the answer is whatever the first tool returned.
import type { ChatMessage } from '../engine/types';
import { ScriptedEngine, type Script } from './scripted-engine';

function user(m: ChatMessage[]): string {
  return m.find((x) => x.role === 'user')?.content ?? '';
}

function field(text: string, label: string): string {
  return new RegExp(`^${label}: (.*)$`, 'm').exec(text)?.[1]?.trim() ?? '';
}

export function demoScript(): Script {
  return {
    analysis: [(m) => `The query asks: ${field(user(m), 'Query')}. A tool can look this up or compute it.`],
    planner: [
      (m) => {
        const u = user(m);
        const tool = /^- ([^:\n]+):/m.exec(u.slice(u.indexOf('Tools:')))?.[1] ?? 'none';
        return JSON.stringify({ justification: 'The first tool listed fits.', context: '', sub_goal: field(u, 'Query'), tool_name: tool });
      },
    ],
    executor: [
      (m) => {
        const u = user(m);
        const arg = /^ {2}- (\w+) \(string, required/m.exec(u)?.[1];
        return JSON.stringify({ args: arg ? { [arg]: field(u, 'Sub-goal') } : {} });
      },
    ],
    verifier: [(m) => (/\nResult: /.test(user(m)) ? '{"explanation": "A tool answered.", "verdict": "STOP"}' : '{"explanation": "No result yet.", "verdict": "CONTINUE"}')],
    generator: [
      (m) => {
        const results = [...user(m).matchAll(/\nResult: ([\s\S]*?)(?=\n\nTurn \d+:|\n\nAnswer:)/g)];
        return results.length ? `From the tool: ${results[results.length - 1][1].trim()}` : 'The tools gave no result, so I cannot answer.';
      },
    ],
  };
}

/** Planner and shared engines for the demo (the planner one reports a demo adapter id). */
export function demoEngines() {
  const script = demoScript();
  return {
    planner: new ScriptedEngine({ planner: script.planner }, 'planner:demo', null),
    shared: new ScriptedEngine({ ...script, planner: undefined }, 'shared:demo'),
  };
}
