import { describe, expect, it } from 'vitest';
import { checkCard, validateArgs } from './validate';
import type { ToolCard } from './tool';

const card: ToolCard = {
  name: 'demo',
  description: 'A demo tool.',
  input: {
    type: 'object',
    properties: {
      query: { type: 'string', description: 'what to look up' },
      count: { type: 'integer', description: 'how many' },
      scale: { type: 'number', description: 'a factor' },
      exact: { type: 'boolean', description: 'exact match' },
      lang: { type: 'string', description: 'language', enum: ['en', 'de'] },
    },
    required: ['query'],
  },
  output: 'text',
  limitations: [],
  examples: [{ goal: 'look up x', args: { query: 'x', count: 2 } }],
  usesNetwork: false,
};

describe('validateArgs', () => {
  it('coerces quoted numbers and booleans and drops undeclared fields', () => {
    const r = validateArgs(card, { query: 'cats', count: '3', scale: ' 2.5 ', exact: 'true', extra: 1 });
    expect(r).toEqual({ ok: true, args: { query: 'cats', count: 3, scale: 2.5, exact: true }, ignored: ['extra'] });
  });

  it('matches field names in another case or style, reads thousands separators and any-case booleans', () => {
    const r = validateArgs(card, { Query: 'cats', COUNT: '1,234', 'scale': '-2,500.5', Exact: 'TRUE', 'l-a-n-g': 'de' });
    expect(r).toEqual({ ok: true, args: { query: 'cats', count: 1234, scale: -2500.5, exact: true, lang: 'de' }, ignored: [] });
    // An exact name wins over a loose one for the same field; a comma that is not a thousands separator is no number.
    expect(validateArgs(card, { QUERY: 'loose', query: 'exact' })).toMatchObject({ ok: true, args: { query: 'exact' } });
    expect(validateArgs(card, { query: 'x', scale: '2,5' })).toMatchObject({ ok: false, error: "tool 'demo': field 'scale' must be a number, got the string \"2,5\"" });
  });

  it('is the rule the executor parser applies: the same arguments give the same outcome', async () => {
    const { parseToolArgs } = await import('../agent/parse');
    for (const args of [{ Query: 'cats', COUNT: '1,234' }, { query: 'x', count: 2.5 }, { count: 1 }, { query: 'x', lang: 'fr', exact: 'False' }]) {
      const direct = validateArgs(card, args);
      const parsed = parseToolArgs(JSON.stringify(args), card);
      expect(parsed.ok).toBe(direct.ok);
      if (parsed.ok && direct.ok) expect(parsed.args).toEqual(direct.args);
      if (!parsed.ok && !direct.ok) expect(parsed.error).toBe(direct.error);
    }
  });

  it('turns a bare number into the string a string field asks for', () => {
    const r = validateArgs(card, { query: 42 });
    expect(r.ok && r.args.query).toBe('42');
  });

  it('names the missing required field', () => {
    const r = validateArgs(card, { count: 1 });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/tool 'demo'.*missing required field 'query'/);
    expect(validateArgs(card, { query: '' }).ok).toBe(false);
  });

  it('names each field with a wrong type, and reports all of them', () => {
    const r = validateArgs(card, { query: 'x', count: 'three', scale: [1], exact: 'yes' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatch(/field 'count' must be an integer, got the string "three"/);
    expect(r.error).toMatch(/field 'scale' must be a number, got an array/);
    expect(r.error).toMatch(/field 'exact' must be a boolean/);
  });

  it('rejects a non-integer for an integer field and an out-of-enum value', () => {
    const a = validateArgs(card, { query: 'x', count: '2.5' });
    expect(!a.ok && a.error).toMatch(/field 'count' must be an integer, got 2.5/);
    const b = validateArgs(card, { query: 'x', lang: 'fr' });
    expect(!b.ok && b.error).toMatch(/field 'lang' must be one of "en", "de", got "fr"/);
    expect(validateArgs(card, { query: 'x', lang: 'de' }).ok).toBe(true);
  });

  it('rejects arguments that are not an object, listing the fields', () => {
    const r = validateArgs(card, 'cats');
    expect(!r.ok && r.error).toMatch(/must be a JSON object with fields 'query', 'count'/);
    expect(validateArgs(card, [1]).ok).toBe(false);
    expect(validateArgs(card, null).ok).toBe(false);
  });
});

describe('checkCard', () => {
  it('accepts a good card and reports each problem of a bad one', () => {
    expect(checkCard(card)).toEqual([]);
    const bad: ToolCard = {
      ...card,
      name: 'bad name',
      input: { type: 'object', properties: { q: { type: 'string', description: '' } }, required: ['missing'] },
      examples: [],
    };
    const problems = checkCard(bad);
    expect(problems.join('\n')).toMatch(/name "bad name"/);
    expect(problems.join('\n')).toMatch(/required field 'missing' is not in input.properties/);
    expect(problems.join('\n')).toMatch(/input field 'q' has no description/);
  });

  it('reports bounds no value can meet, or on a field of the wrong type', () => {
    const bounds = (properties: ToolCard['input']['properties']) => checkCard({ ...card, input: { type: 'object', properties, required: [] }, examples: [] }).join('\n');
    expect(bounds({ q: { type: 'string', description: 'd', maxLength: 0 } })).toMatch(/input field 'q': maxLength must be a positive integer/);
    expect(bounds({ n: { type: 'integer', description: 'd', maxLength: 3 } })).toMatch(/input field 'n': maxLength must be a positive integer on a string field/);
    expect(bounds({ n: { type: 'integer', description: 'd', minimum: 5, maximum: 1 } })).toMatch(/input field 'n': minimum 5 is above maximum 1/);
    expect(bounds({ q: { type: 'string', description: 'd', minimum: 1 } })).toMatch(/input field 'q': minimum must be a finite number on a number or integer field/);
    expect(bounds({ n: { type: 'number', description: 'd', minimum: 0, maximum: 1 }, q: { type: 'string', description: 'd', maxLength: 10 } })).toBe('');
  });

  it('rejects a card whose example does not pass its own schema', () => {
    const problems = checkCard({ ...card, examples: [{ goal: 'g', args: { count: 1 } }] });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/example 0 .*missing required field 'query'/);
  });
});
