// The agent's evolving memory: one entry per turn, holding what was tried and what came back. Stored in full;
// prompts see each result trimmed (see trimForPrompt).

export interface MemoryEntry {
  turn: number;
  subGoal: string;
  toolName: string;
  /** Arguments the tool was called with; null when no call was made. */
  args: Record<string, unknown> | null;
  /** The tool's full output (empty when it failed before producing any). */
  result: string;
  ok: boolean;
  /** What went wrong: a tool error, a timeout, a tool-calling error, or an unusable module output. */
  error?: string;
}

/** Keeps the head and tail of a long text, saying how much was cut, so a prompt stays within budget. */
export function trimForPrompt(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const marker = (n: number) => `\n[... ${n} characters trimmed ...]\n`;
  const budget = Math.max(0, maxChars - marker(text.length).length);
  const head = Math.ceil((budget * 2) / 3);
  const tail = budget - head;
  return text.slice(0, head) + marker(text.length - head - tail) + (tail > 0 ? text.slice(text.length - tail) : '');
}
