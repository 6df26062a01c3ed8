// A demo of the agent without any model: scripted engines whose replies are built from the prompts they
// get, so the loop runs for any query and any set of tools. Each reply is what a model would have to write;
// the answer is what the last tool call returned, as it stands.
import type { ChatMessage } from '../engine/chat-engine';
import { ScriptedEngine, type Script } from './scripted-engine';

function user(m: ChatMessage[]): string {
  return m.find((x) => x.role === 'user')?.content ?? '';
}

function field(text: string, label: string): string {
  return new RegExp(`^${label}: (.*)$`, 'm').exec(text)?.[1]?.trim() ?? '';
}

/** The arithmetic in a query ("What is 17*23?" -> "17*23"), or null: the only thing the demo gives Python. */
export function arithmeticIn(query: string): string | null {
  const m = /[(\d][\d\s.()]*(?:[-+*/^%×÷]\s*[(\d][\d\s.()]*)+/.exec(query);
  if (!m) return null;
  const expr = m[0].trim().replace(/×/g, '*').replace(/÷/g, '/').replace(/\^/g, '**');
  // Balanced parentheses only; anything else is not a sum the demo can hand over as code.
  let depth = 0;
  for (const c of expr) if ((depth += c === '(' ? 1 : c === ')' ? -1 : 0) < 0) return null;
  return depth === 0 ? expr : null;
}

const COMPUTE = 'Compute ';

export function demoScript(): Script {
  return {
    analysis: [
      (m) => {
        // A question keeps its own end mark: "…Hamlet?", never "…Hamlet?.".
        const q = field(user(m), 'Query');
        return `The query asks: ${q}${/[.?!]$/.test(q) ? '' : '.'} A tool can look this up or compute it.`;
      },
    ],
    planner: [
      (m) => {
        const u = user(m);
        const query = field(u, 'Query');
        const tools = [...u.slice(u.indexOf('Tools:')).matchAll(/^- ([^:\n]+):/gm)].map((x) => x[1]);
        // A tool whose call failed (Python that could not load, a tool switched off) is not asked again
        // while another one is left: the same failing call turn after turn shows nothing new.
        const failed = new Set([...u.matchAll(/^Call: (\S+)[^\n]*\nError: /gm)].map((x) => x[1]));
        const usable = tools.filter((t) => !failed.has(t));
        // Python gets code, never prose: arithmetic in the query goes to it, anything else to the first
        // other tool listed (the base generator in the app), so the demo never shows Python's SyntaxError.
        const expr = usable.includes('python') ? arithmeticIn(query) : null;
        const tool = expr ? 'python' : (usable.find((t) => t !== 'python') ?? tools.find((t) => t !== 'python') ?? tools[0] ?? 'none');
        return JSON.stringify({ justification: expr ? 'Arithmetic: Python computes it.' : 'The first tool listed that is not Python.', context: '', sub_goal: expr ? `${COMPUTE}${expr}` : query, tool_name: tool });
      },
    ],
    executor: [
      (m) => {
        const u = user(m);
        const goal = field(u, 'Sub-goal');
        if (/^Tool: python$/m.test(u) && goal.startsWith(COMPUTE)) return JSON.stringify({ args: { code: `print(${goal.slice(COMPUTE.length)})` } });
        const arg = /^ {2}- (\w+) \(string, required/m.exec(u)?.[1];
        return JSON.stringify({ args: arg ? { [arg]: goal } : {} });
      },
    ],
    verifier: [(m) => (/\nResult: /.test(user(m)) ? '{"explanation": "A tool answered.", "verdict": "STOP"}' : '{"explanation": "No result yet.", "verdict": "CONTINUE"}')],
    generator: [
      (m) => {
        const results = [...user(m).matchAll(/\nResult: ([\s\S]*?)(?=\n\nTurn \d+:|\n\nAnswer:)/g)];
        // The result itself is the answer, as a model asked for a final answer would give it: a benchmark's
        // reference ("5") is then matched as it stands, not found inside a sentence about the tool.
        if (results.length) return results[results.length - 1][1].trim();
        // Say why: the last error is what the user can act on (turn a tool on, reload, check the host).
        const errors = [...user(m).matchAll(/\nError: ([^\n]*)/g)];
        return errors.length ? `The tools gave no result, so I cannot answer. The last error: ${errors[errors.length - 1][1].trim()}` : 'The tools gave no result, so I cannot answer.';
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
