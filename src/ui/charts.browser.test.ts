// Training charts as drawn (#20.5): the axis spans the data; a flat series is one labelled line whose
// caption says what it means, not ±0.5 bounds around a flat 0, and float noise around 0 (a loss of ±1e-8)
// is "≈ 0", not a trend stretched over the whole height.
import { describe, expect, it } from 'vitest';
import { render } from 'lit';
import { lineChart } from './charts';

function draw(t: ReturnType<typeof lineChart>) {
  const div = document.createElement('div');
  render(t, div);
  const ys = (div.querySelector('path')!.getAttribute('d') ?? '').split(/[ML]/).filter(Boolean).map((p) => Number(p.split(',')[1]));
  return {
    ticks: [...div.querySelectorAll('text.tick')].map((e) => e.textContent),
    note: div.querySelector('[data-testid="flat-note"]')?.textContent ?? null,
    ys,
    label: div.querySelector('svg')!.getAttribute('aria-label'),
  };
}

describe('lineChart', () => {
  it('says what a flat line means instead of inventing bounds', () => {
    const clip = draw(lineChart('Clip fraction', [{ label: 'clip', values: [0, 0, 0, 0] }], { flat: (v) => (v === 0 ? 'no ratio was clipped' : null) }));
    expect(clip.ticks).toEqual(['0']);
    expect(clip.note).toBe('all 0: no ratio was clipped');
    expect(clip.label).toBe('Clip fraction: all 0: no ratio was clipped');
    expect(new Set(clip.ys).size).toBe(1);

    // Noise around zero below zeroBelow: one line at 0, not ±1.3e-8 axes.
    const loss = draw(lineChart('Loss', [{ label: 'loss', values: [1.3e-8, -1.3e-8, 4e-9] }], { zeroBelow: 1e-6, flat: (v) => (v === 0 ? 'usual' : null) }));
    expect(loss.ticks).toEqual(['≈ 0']);
    expect(loss.note).toBe('all ≈ 0 (every |value| < 1.0e-6): usual');
    expect(new Set(loss.ys).size).toBe(1);

    // Flat elsewhere, with no meaning given: the value and how long.
    expect(draw(lineChart('Tokens per second', [{ label: 't', values: [12, 12] }])).note).toBe('all 12 over 2 steps');
  });

  it('spans the data when it changes', () => {
    const r = draw(lineChart('Loss', [{ label: 'loss', values: [0.25, -0.5, NaN, 0.1] }], { zeroBelow: 1e-6 }));
    expect(r.ticks).toEqual(['0.25', '-0.5']);
    expect(r.note).toBeNull();
    // The top and bottom of the drawing are the data's own extremes.
    expect(Math.min(...r.ys)).toBeCloseTo(10, 5);
    expect(Math.max(...r.ys)).toBeCloseTo(104, 5);
  });

  it('labels an axis bound that is float noise against the span as 0, and large counts in k', () => {
    expect(draw(lineChart('KL', [{ label: 'kl', values: [5.4e-16, 0.2, 0.639] }])).ticks).toEqual(['0.639', '0']);
    expect(draw(lineChart('Tokens per second', [{ label: 't', values: [8719.3, 70_123, 1_234_567] }])).ticks).toEqual(['1.2M', '8719.3']);
    expect(draw(lineChart('Tokens per second', [{ label: 't', values: [12_345, 70_123] }])).ticks).toEqual(['70.1k', '12.3k']);
    // A small value is not noise when the span is small too.
    expect(draw(lineChart('Loss', [{ label: 'l', values: [0.001, 0.002] }])).ticks).toEqual(['2.0e-3', '1.0e-3']);
  });
});
