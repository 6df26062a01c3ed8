// The offline tools' knowledge: the facts the lookup tool knows, the units the converter knows, and the
// arithmetic the calculator evaluates. Plain data and pure functions, so the tool-choice task (src/tasks) builds
// its questions and answers from the same tables its tools answer from.

/** The facts the lookup tool knows: country → capital, element → chemical symbol. */
export const CAPITALS: Readonly<Record<string, string>> = Object.freeze({
  France: 'Paris', Spain: 'Madrid', Italy: 'Rome', Germany: 'Berlin', Norway: 'Oslo', Sweden: 'Stockholm',
  Finland: 'Helsinki', Poland: 'Warsaw', Austria: 'Vienna', Greece: 'Athens', Portugal: 'Lisbon', Ireland: 'Dublin',
  Egypt: 'Cairo', Kenya: 'Nairobi', Ghana: 'Accra', Peru: 'Lima', Chile: 'Santiago', Cuba: 'Havana', Japan: 'Tokyo',
  China: 'Beijing', India: 'New Delhi', Nepal: 'Kathmandu', Iran: 'Tehran', Iraq: 'Baghdad', Canada: 'Ottawa',
  Mexico: 'Mexico City', Brazil: 'Brasilia', Argentina: 'Buenos Aires', Russia: 'Moscow', Turkey: 'Ankara',
  Denmark: 'Copenhagen', Hungary: 'Budapest', Belgium: 'Brussels', Vietnam: 'Hanoi', Thailand: 'Bangkok',
  Australia: 'Canberra', Morocco: 'Rabat', Senegal: 'Dakar', Colombia: 'Bogota', Iceland: 'Reykjavik',
});

export const SYMBOLS: Readonly<Record<string, string>> = Object.freeze({
  hydrogen: 'H', helium: 'He', lithium: 'Li', carbon: 'C', nitrogen: 'N', oxygen: 'O', sodium: 'Na',
  magnesium: 'Mg', aluminium: 'Al', silicon: 'Si', sulfur: 'S', chlorine: 'Cl', potassium: 'K', calcium: 'Ca',
  iron: 'Fe', copper: 'Cu', zinc: 'Zn', silver: 'Ag', tin: 'Sn', gold: 'Au', mercury: 'Hg', lead: 'Pb',
  uranium: 'U', neon: 'Ne',
});

/** Units the converter knows, each with its size in a base unit of its dimension. */
export const UNITS: Readonly<Record<string, { dimension: 'length' | 'mass' | 'volume' | 'time'; size: number }>> = Object.freeze({
  m: { dimension: 'length', size: 1 },
  km: { dimension: 'length', size: 1000 },
  cm: { dimension: 'length', size: 0.01 },
  mi: { dimension: 'length', size: 1609.344 },
  ft: { dimension: 'length', size: 0.3048 },
  in: { dimension: 'length', size: 0.0254 },
  kg: { dimension: 'mass', size: 1 },
  g: { dimension: 'mass', size: 0.001 },
  lb: { dimension: 'mass', size: 0.45359237 },
  oz: { dimension: 'mass', size: 0.028349523125 },
  l: { dimension: 'volume', size: 1 },
  ml: { dimension: 'volume', size: 0.001 },
  gal: { dimension: 'volume', size: 3.785411784 },
  h: { dimension: 'time', size: 3600 },
  min: { dimension: 'time', size: 60 },
  s: { dimension: 'time', size: 1 },
});

/** A number as every tool and answer of the task writes it: at most two decimals, no trailing zeros. */
export function formatNumber(x: number): string {
  const r = Math.round(x * 100) / 100;
  return Object.is(r, -0) ? '0' : String(r);
}

/** `value` in unit `from` expressed in unit `to`, or an error message naming the unit at fault. */
export function convertUnits(value: number, from: string, to: string): { ok: true; value: number } | { ok: false; error: string } {
  const a = UNITS[from];
  const b = UNITS[to];
  if (!a) return { ok: false, error: `unknown unit '${from}' (known: ${Object.keys(UNITS).join(', ')})` };
  if (!b) return { ok: false, error: `unknown unit '${to}' (known: ${Object.keys(UNITS).join(', ')})` };
  if (a.dimension !== b.dimension) return { ok: false, error: `cannot convert ${a.dimension} (${from}) to ${b.dimension} (${to})` };
  return { ok: true, value: (value * a.size) / b.size };
}

/** `a op b [op c]` with single spaces, integers, and + - * only: what the arithmetic questions ask. */
export function isExpression(s: string): boolean {
  return /^\d+( [+*-] \d+){1,2}$/.test(s);
}

/** Evaluates an expression isExpression accepts, with * before + and - (as Python does). */
export function evaluateExpression(s: string): number {
  if (!isExpression(s)) throw new Error(`tool task: '${s}' is not an arithmetic question's expression`);
  const tokens = s.split(' ');
  // Fold the products first, then add and subtract left to right.
  const terms: Array<{ sign: number; value: number }> = [{ sign: 1, value: Number(tokens[0]) }];
  for (let i = 1; i < tokens.length; i += 2) {
    const op = tokens[i];
    const v = Number(tokens[i + 1]);
    if (op === '*') terms[terms.length - 1].value *= v;
    else terms.push({ sign: op === '-' ? -1 : 1, value: v });
  }
  return terms.reduce((s, t) => s + t.sign * t.value, 0);
}
