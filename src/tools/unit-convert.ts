// The unit converter of the tool-choice task: lengths, masses, volumes and times between the units it lists,
// computed on the device and written as every answer of the task is (two decimals at most).
import { convertUnits, formatNumber, UNITS } from './offline-tables';
import type { Tool, ToolCard, ToolResult } from './tool';

export const UNIT_CONVERT_CARD: ToolCard = {
  name: 'convert',
  description: 'Converts a quantity between units.',
  input: {
    type: 'object',
    properties: {
      value: { type: 'number', description: 'The quantity to convert.' },
      from: { type: 'string', description: 'Its unit.', enum: Object.keys(UNITS) },
      to: { type: 'string', description: 'The unit wanted.', enum: Object.keys(UNITS) },
    },
    required: ['value', 'from', 'to'],
  },
  output: 'The converted value alone, e.g. "8.05".',
  limitations: [],
  examples: [{ goal: 'Convert 5 mi to km.', args: { value: 5, from: 'mi', to: 'km' } }],
  usesNetwork: false,
};

export class UnitConvertTool implements Tool {
  readonly card = UNIT_CONVERT_CARD;

  async run(args: Record<string, unknown>): Promise<ToolResult> {
    const value = typeof args.value === 'number' ? args.value : typeof args.value === 'string' && args.value.trim() !== '' ? Number(args.value) : NaN;
    if (!Number.isFinite(value)) return { ok: false, output: '', error: "convert: 'value' must be a finite number" };
    const r = convertUnits(value, String(args.from ?? ''), String(args.to ?? ''));
    if (!r.ok) return { ok: false, output: '', error: `convert: ${r.error}` };
    return { ok: true, output: formatNumber(r.value) };
  }
}
