// The calculator of the tool-choice task: integer arithmetic with + - * (products first), computed on the device.
// The task's arithmetic tool where the app's Python is too slow to train with: a Python run starts a fresh
// interpreter worker, about 1.3 CPU-seconds a call in Node, many times a training step's model work.
import { evaluateExpression, formatNumber } from './offline-tables';
import type { Tool, ToolCard, ToolResult } from './tool';

export const CALCULATOR_CARD: ToolCard = {
  name: 'calculator',
  description: 'Computes an arithmetic expression.',
  input: { type: 'object', properties: { expression: { type: 'string', description: 'Whole numbers with + - *, e.g. "12 * 7 + 3".' } }, required: ['expression'] },
  output: 'The value alone, e.g. "87".',
  limitations: [],
  examples: [{ goal: 'Compute 12 * 7 + 3.', args: { expression: '12 * 7 + 3' } }],
  usesNetwork: false,
};

export class CalculatorTool implements Tool {
  readonly card = CALCULATOR_CARD;

  async run(args: Record<string, unknown>): Promise<ToolResult> {
    const e = typeof args.expression === 'string' ? args.expression.trim().replace(/\s+/g, ' ') : '';
    try {
      return { ok: true, output: formatNumber(evaluateExpression(e)) };
    } catch {
      return { ok: false, output: '', error: `calculator: '${e}' is not whole numbers joined by + - * (two or three of them)` };
    }
  }
}
