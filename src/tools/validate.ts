// The one check of a tool call's arguments against the tool card's input schema, for the executor's parser
// (src/agent/parse.ts) and the registry alike. Small models write argument names in another case or style
// ("Expression", "max-results"), quote numbers ("3", "1,234") and booleans ("True"), so those are matched and
// coerced rather than rejected; anything that cannot be read as the declared type is an error that names the
// field, so the executor can retry with a precise hint.

import type { JsonSchemaProperty, ToolCard } from './tool';

export type ValidationResult =
  | { ok: true; args: Record<string, unknown>; /** Fields the card does not declare; dropped. */ ignored: string[] }
  | { ok: false; error: string };

function coerce(name: string, prop: JsonSchemaProperty, value: unknown): { value: unknown } | { error: string } {
  switch (prop.type) {
    case 'string':
      if (typeof value === 'string') return { value };
      // A bare number where text was asked for (e.g. a query "42") is unambiguous.
      if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return { value: String(value) };
      return { error: `field '${name}' must be a string, got ${describe(value)}` };
    case 'number':
    case 'integer': {
      let n: number | undefined;
      // Thousands separators are read as such ("1,234" is 1234), as a person would.
      const text = typeof value === 'string' ? value.trim().replace(/(\d),(?=\d{3}\b)/g, '$1') : '';
      if (typeof value === 'number') n = value;
      else if (text !== '' && Number.isFinite(Number(text))) n = Number(text);
      if (n === undefined || !Number.isFinite(n)) return { error: `field '${name}' must be ${prop.type === 'integer' ? 'an integer' : 'a number'}, got ${describe(value)}` };
      if (prop.type === 'integer' && !Number.isInteger(n)) return { error: `field '${name}' must be an integer, got ${n}` };
      return { value: n };
    }
    case 'boolean':
      if (typeof value === 'boolean') return { value };
      if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return { value: value.trim().toLowerCase() === 'true' };
      return { error: `field '${name}' must be a boolean (true or false), got ${describe(value)}` };
    default:
      return { error: `field '${name}' has an unsupported schema type '${String((prop as { type: unknown }).type)}'` };
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** A name reduced to lower-case letters and digits: 'Max_Results', 'max-results' and 'maxResults' are one. */
export function normalizeKey(k: string): string {
  return k.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * Validates and coerces `args` for `card`. Field names are matched exactly, else by normalizeKey. Errors
 * name the tool and the field at fault.
 */
export function validateArgs(card: ToolCard, args: unknown): ValidationResult {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return { ok: false, error: `tool '${card.name}': arguments must be a JSON object with fields ${fieldList(card)}, got ${describe(args)}` };
  }
  const byNorm = new Map(Object.keys(card.input.properties).map((k) => [normalizeKey(k), k]));
  const input: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    const name = k in card.input.properties ? k : byNorm.get(normalizeKey(k));
    if (name === undefined) unknown.push(k);
    // An exact name wins over a loose one for the same field.
    else if (!(name in input) || k === name) input[name] = v;
  }
  const out: Record<string, unknown> = {};
  const errors: string[] = [];
  for (const name of card.input.required) {
    if (input[name] === undefined || input[name] === null || input[name] === '') errors.push(`missing required field '${name}'`);
  }
  for (const [name, prop] of Object.entries(card.input.properties)) {
    const value = input[name];
    // An empty string counts as absent: reported above when required, skipped when optional.
    if (value === undefined || value === null || value === '') continue;
    const r = coerce(name, prop, value);
    if ('error' in r) {
      errors.push(r.error);
      continue;
    }
    if (prop.enum && !prop.enum.includes(r.value as string | number)) {
      errors.push(`field '${name}' must be one of ${prop.enum.map((e) => JSON.stringify(e)).join(', ')}, got ${JSON.stringify(r.value)}`);
      continue;
    }
    out[name] = r.value;
  }
  if (errors.length) return { ok: false, error: `tool '${card.name}': ${errors.join('; ')}` };
  return { ok: true, args: out, ignored: unknown };
}

function fieldList(card: ToolCard): string {
  const names = Object.keys(card.input.properties);
  return names.length ? names.map((n) => `'${n}'`).join(', ') : '(none)';
}

const NAME_RE = /^[A-Za-z][A-Za-z0-9_]*$/;

/**
 * Checks that a card is usable: a name a model can write, required fields that exist, and examples that
 * pass the card's own schema (a card whose examples fail would teach the model to make bad calls).
 * Returns the problems found; empty means the card is fine.
 */
export function checkCard(card: ToolCard): string[] {
  const problems: string[] = [];
  if (!card || typeof card !== 'object') return ['card is missing'];
  if (typeof card.name !== 'string' || !NAME_RE.test(card.name)) problems.push(`name ${JSON.stringify(card.name)} must be letters, digits and _ starting with a letter`);
  if (typeof card.description !== 'string' || !card.description.trim()) problems.push('description is empty');
  if (!card.input || card.input.type !== 'object' || typeof card.input.properties !== 'object') problems.push("input must be {type: 'object', properties, required}");
  else {
    for (const r of card.input.required ?? []) if (!(r in card.input.properties)) problems.push(`required field '${r}' is not in input.properties`);
    for (const [k, p] of Object.entries(card.input.properties)) {
      if (!['string', 'number', 'integer', 'boolean'].includes(p.type)) problems.push(`input field '${k}' has unsupported type '${String(p.type)}'`);
      if (!p.description?.trim()) problems.push(`input field '${k}' has no description`);
      // The bounds go into a decoding grammar: one that no value can meet would leave the model nothing to write.
      if (p.maxLength !== undefined && (p.type !== 'string' || !Number.isInteger(p.maxLength) || p.maxLength < 1)) problems.push(`input field '${k}': maxLength must be a positive integer on a string field`);
      for (const b of ['minimum', 'maximum'] as const) {
        if (p[b] !== undefined && (p.type === 'string' || p.type === 'boolean' || !Number.isFinite(p[b]))) problems.push(`input field '${k}': ${b} must be a finite number on a number or integer field`);
      }
      if (p.minimum !== undefined && p.maximum !== undefined && p.minimum > p.maximum) problems.push(`input field '${k}': minimum ${p.minimum} is above maximum ${p.maximum}`);
    }
  }
  if (typeof card.output !== 'string' || !card.output.trim()) problems.push('output is empty');
  if (!Array.isArray(card.limitations)) problems.push('limitations must be an array');
  if (!Array.isArray(card.examples)) problems.push('examples must be an array');
  else if (problems.length === 0) {
    card.examples.forEach((ex, i) => {
      const r = validateArgs(card, ex.args);
      if (!r.ok) problems.push(`example ${i} (${JSON.stringify(ex.goal)}): ${r.error}`);
      else if (r.ignored.length) problems.push(`example ${i} uses undeclared field(s) ${r.ignored.join(', ')}`);
    });
  }
  if (typeof card.usesNetwork !== 'boolean') problems.push('usesNetwork must be true or false');
  return problems;
}
