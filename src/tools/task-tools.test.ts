// The tool-choice task's local tools: the fact table and the unit converter, with their errors.
import { describe, expect, it } from 'vitest';
import { checkCard } from './validate';
import { FactLookupTool } from './fact-lookup';
import { UnitConvertTool } from './unit-convert';
import { CalculatorTool } from './calculator';

describe('FactLookupTool', () => {
  const tool = new FactLookupTool();
  it('looks facts up in its table, whatever the case of the entity', async () => {
    expect(await tool.run({ entity: 'peru', attribute: 'capital' })).toEqual({ ok: true, output: 'Lima' });
    expect(await tool.run({ entity: 'Gold', attribute: 'symbol' })).toEqual({ ok: true, output: 'Au' });
  });
  it('says what it does not know or was not asked properly', async () => {
    expect(await tool.run({ entity: 'Atlantis', attribute: 'capital' })).toEqual({ ok: false, output: '', error: "lookup: no capital known for 'Atlantis'" });
    expect((await tool.run({ entity: 'Peru', attribute: 'population' })).error).toMatch(/'attribute' must be "capital" or "symbol"/);
    expect(checkCard(tool.card)).toEqual([]);
  });
});

describe('UnitConvertTool', () => {
  const tool = new UnitConvertTool();
  it('converts between units of one dimension, two decimals at most', async () => {
    expect(await tool.run({ value: 5, from: 'mi', to: 'km' })).toEqual({ ok: true, output: '8.05' });
    expect(await tool.run({ value: '2', from: 'h', to: 's' })).toEqual({ ok: true, output: '7200' });
  });
  it('refuses a value that is not a number and units it cannot convert', async () => {
    expect((await tool.run({ value: 'five', from: 'mi', to: 'km' })).error).toBe("convert: 'value' must be a finite number");
    expect((await tool.run({ value: 1, from: 'kg', to: 'm' })).error).toBe('convert: cannot convert mass (kg) to length (m)');
    expect(checkCard(tool.card)).toEqual([]);
  });
});

describe('CalculatorTool', () => {
  const tool = new CalculatorTool();
  it('computes + - * with products first', async () => {
    expect(await tool.run({ expression: '64 - 12 * 63' })).toEqual({ ok: true, output: '-692' });
    expect(await tool.run({ expression: ' 2  + 3 ' })).toEqual({ ok: true, output: '5' });
  });
  it('refuses anything else, saying what it takes', async () => {
    expect((await tool.run({ expression: '__import__("os")' })).error).toMatch(/is not whole numbers joined by \+ - \*/);
    expect((await tool.run({ expression: 'What is the capital of Peru?' })).ok).toBe(false);
    expect(checkCard(tool.card)).toEqual([]);
  });
});
