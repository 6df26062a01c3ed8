// Training charts as drawn (#20.5, #28.6): uPlot on a canvas, so what is checked is what the chart was
// told to draw and says in words: a flat series is one labelled level whose caption says what it means
// (not ±0.5 bounds around a flat 0, and float noise around 0 is "≈ 0"); axes label readable values; hovering
// reads a step's values out; smoothing draws an EMA over the raw points; loss/KL offer a log scale; the chart
// is fed each step's data, not made again, and its x-range follows the run unless the user zoomed.
import { afterEach, describe, expect, it } from 'vitest';
import { render } from 'lit';
import { lineChart, type AgentflowLineChart, type LineChartOptions, type Series } from './charts';

const hosts: HTMLElement[] = [];
afterEach(() => hosts.splice(0).forEach((h) => h.remove()));

async function draw(title: string, series: Series[], o: LineChartOptions = {}) {
  const host = document.createElement('div');
  host.style.width = '420px';
  document.body.append(host);
  hosts.push(host);
  render(lineChart(title, series, o), host);
  const el = host.querySelector<AgentflowLineChart>('agentflow-line-chart')!;
  await expect.poll(() => el.plot !== null).toBe(true);
  const root = el.shadowRoot!;
  return {
    el,
    host,
    redraw: async (s: Series[], o2: LineChartOptions = o) => {
      render(lineChart(title, s, o2), host);
      const n = Math.max(...s.map((x) => x.values.filter(Number.isFinite).length)).toString();
      await expect.poll(() => root.querySelector<HTMLElement>('.plot')!.dataset.points?.split(',')[0]).toBe(n);
    },
    note: () => root.querySelector('[data-testid="flat-note"]')?.textContent ?? null,
    label: () => root.querySelector('[role="img"]')!.getAttribute('aria-label'),
    /** Distinct y values drawn for the first series. */
    levels: () => new Set((el.plot!.data[1] as Array<number | null>).filter((y) => y !== null)),
    /** Hovers the step and returns the legend's read-out, "label value" per series. */
    hover: async (step: number) => {
      const over = root.querySelector<HTMLElement>('.u-over')!;
      const r = over.getBoundingClientRect();
      over.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: r.left + el.plot!.valToPos(step, 'x'), clientY: r.top + r.height / 2 }));
      await new Promise((f) => requestAnimationFrame(() => f(null)));
      return [...root.querySelectorAll('.u-legend .u-series')].map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent!.trim()).join(' '));
    },
  };
}

describe('lineChart', () => {
  it('says what a flat line means instead of inventing bounds', async () => {
    const clip = await draw('Clip fraction', [{ label: 'clip', values: [0, 0, 0, 0] }], { flat: (v) => (v === 0 ? 'no ratio was clipped' : null) });
    expect(clip.el.yTicks).toEqual(['0']);
    expect(clip.note()).toBe('all 0: no ratio was clipped');
    expect(clip.label()).toBe('Clip fraction: all 0: no ratio was clipped');
    expect(clip.levels()).toEqual(new Set([0]));

    // Noise around zero below zeroBelow: one line at 0, not ±1.3e-8 axes; the read-out still gives the value.
    const loss = await draw('Loss', [{ label: 'loss', values: [1.3e-8, -1.3e-8, 4e-9] }], { zeroBelow: 1e-6, flat: (v) => (v === 0 ? 'usual' : null) });
    expect(loss.el.yTicks).toEqual(['≈ 0']);
    expect(loss.note()).toBe('all ≈ 0 (every |value| < 1.0e-6): usual');
    expect(loss.levels()).toEqual(new Set([0]));
    expect(await loss.hover(2)).toContain('loss -1.3e-8');

    // Flat elsewhere, with no meaning given: the value and how long.
    expect((await draw('Tokens per second', [{ label: 't', values: [12, 12] }])).note()).toBe('all 12 over 2 steps');

    // Steps with no value at all (a statistic the run does not measure): the caption says why, not "no data".
    const kl = await draw('KL', [{ label: 'KL', values: [NaN, NaN, NaN] }], { empty: 'not measured at beta 0' });
    expect(kl.note()).toBe('not measured at beta 0');
    expect(kl.label()).toBe('KL: not measured at beta 0');
    expect((await draw('KL', [{ label: 'KL', values: [NaN, 0.2, 0.3] }], { empty: 'not measured at beta 0' })).note()).toBeNull();
  });

  it('spans the data when it changes, and its text alternative gives the last values', async () => {
    const r = await draw('Loss', [{ label: 'loss', values: [0.25, -0.5, NaN, 0.1] }], { zeroBelow: 1e-6 });
    expect(r.note()).toBeNull();
    expect(r.label()).toBe('Loss: loss 0.1');
    const y = r.el.plot!.scales.y;
    expect(y.min).toBeLessThanOrEqual(-0.5);
    expect(y.max).toBeGreaterThanOrEqual(0.25);
    // Within a tenth of the span of the data's extremes: the data fills the height.
    expect(y.max! - y.min!).toBeLessThan(0.75 * 1.3);
    // The NaN step is a gap, not a point at 0.
    expect(r.el.plot!.data[1]).toEqual([0.25, -0.5, null, 0.1]);
    expect(r.el.yTicks.length).toBeGreaterThanOrEqual(3);
  });

  it('labels axis values readably: float noise against the span as 0, large counts in k and M', async () => {
    const kl = await draw('KL', [{ label: 'kl', values: [5.4e-16, 0.2, 0.639] }]);
    expect(kl.el.yTicks[0]).toBe('0');
    expect(kl.el.yTicks.join(' ')).not.toMatch(/e-/);
    const tps = await draw('Tokens per second', [{ label: 't', values: [8719.3, 70_123, 1_234_567] }]);
    expect(tps.el.yTicks.every((t) => /^(0|\d+(\.\d)?[kM])$/.test(t))).toBe(true);
    expect(tps.el.yTicks.some((t) => t.endsWith('M'))).toBe(true);
    // A small value is not noise when the span is small too.
    const small = await draw('Loss', [{ label: 'l', values: [0.001, 0.002] }]);
    expect(small.el.yTicks).toContain('1.0e-3');
    expect(small.el.yTicks).toContain('2.0e-3');
  });

  it('reads a step’s values out on hover, and smooths the drawn line while keeping the raw points', async () => {
    const reward = [0, 1, 0, 1, 1, 1];
    const c = await draw('Reward', [{ label: 'reward', values: reward }, { label: 'rolling', values: [0, 0.5, 0.33, 0.5, 0.6, 0.67] }]);
    expect(await c.hover(3)).toEqual(expect.arrayContaining(['reward 0', 'rolling 0.33']));
    expect(await c.hover(4)).toEqual(expect.arrayContaining(['reward 1', 'rolling 0.5']));

    const s = await draw('Reward', [{ label: 'reward', values: reward }], { smoothing: 0.9 });
    // Debiased EMA at step 2: (0.9·0.1·0 + 0.1·1) / (1 − 0.9²) = 0.526.
    expect(await s.hover(2)).toEqual(expect.arrayContaining(['reward 1', 'reward (smoothed) 0.526']));
    expect(s.el.plot!.data[1]).toEqual(reward);
    expect(s.el.plot!.data[2]![0]).toBe(0);
  });

  it('offers a log scale for loss and KL: log for positive values, asinh for signed ones', async () => {
    const kl = await draw('KL', [{ label: 'kl', values: [1e-4, 1e-3, 1e-2, 1e-1] }], { log: true, zeroBelow: 1e-9 });
    const box = kl.el.shadowRoot!.querySelector<HTMLInputElement>('label.log input')!;
    expect(box.closest('label')!.textContent!.trim()).toBe('Log scale');
    const pos = () => [1e-4, 1e-3, 1e-2].map((v) => kl.el.plot!.valToPos(v, 'y'));
    // Linear: the small decades are crushed at the bottom.
    const [a, b, c] = pos();
    expect((b - c) / (a - b)).toBeGreaterThan(5);
    box.click();
    await expect.poll(() => kl.el.plot?.scales.y.distr).toBe(3);
    // Each decade is the same height.
    const [d, e, f] = pos();
    expect(d - e).toBeCloseTo(e - f, 3);

    const loss = await draw('Loss', [{ label: 'loss', values: [-0.5, 0.01, 0, 2] }], { log: true, zeroBelow: 1e-6 });
    loss.el.shadowRoot!.querySelector<HTMLInputElement>('label.log input')!.click();
    await expect.poll(() => loss.el.plot?.scales.y.distr).toBe(4);
    expect(loss.el.plot!.data[1]).toEqual([-0.5, 0.01, 0, 2]);
    // No switch where it is not offered.
    expect((await draw('Clip', [{ label: 'c', values: [0, 0.1] }])).el.shadowRoot!.querySelector('label.log')).toBeNull();
  });

  it('takes each step’s data into the same chart and follows the run unless the user zoomed', async () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => Math.sin(i / 7));
    const c = await draw('Loss', [{ label: 'loss', values: values(100) }]);
    const plot = c.el.plot!;
    const x = () => [plot.scales.x.min, plot.scales.x.max];
    expect(x()).toEqual([1, 100]);
    await c.redraw([{ label: 'loss', values: values(120) }]);
    expect(c.el.plot).toBe(plot);
    expect(x()).toEqual([1, 120]);

    // A drag over steps ~20–40 zooms there, and new steps leave that window alone.
    const over = c.el.shadowRoot!.querySelector<HTMLElement>('.u-over')!;
    const r = over.getBoundingClientRect();
    const at = (step: number) => ({ bubbles: true, clientX: r.left + plot.valToPos(step, 'x'), clientY: r.top + 20 });
    over.dispatchEvent(new MouseEvent('mousemove', at(20)));
    over.dispatchEvent(new MouseEvent('mousedown', { ...at(20), button: 0 }));
    // uPlot ignores a move with no movement while dragging (a stray event Chrome sends on focus).
    over.dispatchEvent(new MouseEvent('mousemove', { ...at(40), movementX: 1 }));
    document.dispatchEvent(new MouseEvent('mouseup', { ...at(40), button: 0 }));
    await expect.poll(() => plot.scales.x.max! < 60).toBe(true);
    const zoomed = x();
    await c.redraw([{ label: 'loss', values: values(140) }]);
    expect(x()).toEqual(zoomed);

    // A double click shows the whole run again, and the view follows new steps.
    over.dispatchEvent(new MouseEvent('dblclick', at(30)));
    await expect.poll(x).toEqual([1, 140]);
    await c.redraw([{ label: 'loss', values: values(150) }]);
    expect(x()).toEqual([1, 150]);

    // A window zoomed onto the newest steps slides along with the run.
    plot.setScale('x', { min: 130, max: 150 });
    await c.redraw([{ label: 'loss', values: values(160) }]);
    expect(x()).toEqual([140, 160]);
  });
});
