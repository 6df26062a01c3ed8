// The fact lookup tool of the tool-choice task: a small built-in table (capitals, chemical symbols), looked up
// on the device. It answers only what the table holds, so a question about one of its facts is answerable
// through it and through nothing else the task offers.
import { CAPITALS, SYMBOLS } from './offline-tables';
import type { Tool, ToolCard, ToolResult } from './tool';

export const FACT_LOOKUP_CARD: ToolCard = {
  name: 'lookup',
  description: 'Looks up a fact in a table.',
  input: {
    type: 'object',
    properties: {
      entity: { type: 'string', description: 'The country or chemical element, e.g. "Peru" or "gold".' },
      attribute: { type: 'string', description: 'What to look up.', enum: ['capital', 'symbol'] },
    },
    required: ['entity', 'attribute'],
  },
  output: 'The fact alone, e.g. "Lima".',
  limitations: [],
  examples: [{ goal: 'Find the capital of Peru.', args: { entity: 'Peru', attribute: 'capital' } }],
  usesNetwork: false,
};

export class FactLookupTool implements Tool {
  readonly card = FACT_LOOKUP_CARD;

  async run(args: Record<string, unknown>): Promise<ToolResult> {
    const entity = typeof args.entity === 'string' ? args.entity.trim() : '';
    const attribute = args.attribute;
    if (attribute !== 'capital' && attribute !== 'symbol') return { ok: false, output: '', error: "lookup: 'attribute' must be \"capital\" or \"symbol\"" };
    const table: Readonly<Record<string, string>> = attribute === 'capital' ? CAPITALS : SYMBOLS;
    const key = Object.keys(table).find((k) => k.toLowerCase() === entity.toLowerCase());
    if (!key) return { ok: false, output: '', error: `lookup: no ${attribute} known for '${entity}'` };
    return { ok: true, output: table[key] };
  }
}
