// Charts. Training curves are uPlot line charts (canvas: a 5000-step run stays cheap to draw, where SVG
// paths of every point, rebuilt each step, slowed the tab down as the run grew), with readable axes, hover
// read-outs, EMA smoothing, a log scale where a metric spans decades, drag-to-zoom and a view that follows
// the run. Accuracy and tool use are small inline SVG bar charts. NaN/Infinity points are gaps, never 0.
import { svg, html, nothing, LitElement, css, unsafeCSS, type TemplateResult } from 'lit';
import uPlot from 'uplot';
// uPlot's stylesheet as text: the chart lives in a shadow root, which a page-level stylesheet cannot reach.
import uplotCss from 'uplot/dist/uPlot.min.css?inline';

export interface Series {
  label: string;
  values: number[];
  color?: string;
  /** Few values among gaps (an evaluation every k steps): drawn as dots joined across the gaps. */
  sparse?: boolean;
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];
const W = 320;

function fmt(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a < 0.01 || a >= 1e4)) return v.toExponential(1);
  return Number(v.toFixed(a < 1 ? 3 : 1)).toString();
}

/**
 * An axis bound: one that is float noise against the axis's span (a KL of 5e-16 under a top of 0.6) is 0 to
 * the reader, and large counts read as 70k rather than 7.0e+4.
 */
function fmtBound(v: number, span: number): string {
  if (Math.abs(v) < span * 1e-6) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toFixed(a >= 1e7 ? 0 : 1))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toFixed(a >= 1e5 ? 0 : 1))}k`;
  return fmt(v);
}

export interface LineChartOptions {
  /** Values closer to 0 than this are all "≈ 0": float noise around zero is not drawn as a trend. */
  zeroBelow?: number;
  /** What a flat line means for this metric, given its value (e.g. 0 -> "no ratio was clipped"). */
  flat?: (value: number) => string | null;
  /**
   * Offer a log-scale switch, for metrics whose steps span decades (loss, KL): a log axis when every value
   * is > 0, else asinh (log-like away from 0, linear within `zeroBelow` of it), since a loss can be ≤ 0.
   */
  log?: boolean;
  /** EMA weight of the drawn line (0 or absent: none); the raw points stay drawn, faint, and in the read-out. */
  smoothing?: number;
  /** The step of each value (default 1, 2, …), for series that include a step 0 (an evaluation before training). */
  x?: readonly number[];
  /** Why a chart whose steps have no value at all is empty (e.g. a statistic the run's settings do not measure). */
  empty?: string;
}

/** What a line chart says about its data, before any drawing: the axis level if flat, the caption, the text alternative. */
export interface LineView {
  /** Steps (the longest series). */
  n: number;
  /** Every finite value is one level (or within `zeroBelow` of 0): the axis is one labelled level. */
  constant: boolean;
  level: number;
  levelText: string;
  note: string | null;
  label: string;
}

/**
 * A series that does not change (or stays within `zeroBelow` of 0) is one labelled level, and the caption
 * says what that means, instead of stretching invented bounds (±0.5) or noise (±1e-8) over the whole height.
 */
export function describeLine(title: string, series: readonly Series[], o: LineChartOptions = {}): LineView {
  let lo = Infinity;
  let hi = -Infinity;
  let n = 0;
  for (const s of series) {
    n = Math.max(n, s.values.length);
    // A loop, not Math.min(...values): runs are thousands of steps long and this runs at each one.
    for (const v of s.values) {
      if (!Number.isFinite(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  const any = lo <= hi;
  const nearZero = o.zeroBelow !== undefined && any && Math.max(Math.abs(lo), Math.abs(hi)) < o.zeroBelow;
  // One level for the whole axis; said in words only once there are two steps (one point is not a line).
  const constant = any && (hi === lo || nearZero);
  const flat = constant && n >= 2;
  const level = nearZero ? 0 : any ? lo : 0;
  const levelText = nearZero ? '≈ 0' : fmt(level);
  const meaning = flat ? o.flat?.(level) : null;
  const note = flat
    ? `${nearZero ? `all ≈ 0 (every |value| < ${fmt(o.zeroBelow!)})` : `all ${levelText}`}${meaning ? `: ${meaning}` : ` over ${n} step${n === 1 ? '' : 's'}`}`
    : !any && n > 0 && o.empty
      ? o.empty
      : null;
  const lastOf = (s: Series) => {
    for (let i = s.values.length - 1; i >= 0; i--) if (Number.isFinite(s.values[i])) return s.values[i];
    return undefined;
  };
  const label = `${title}: ${note ?? series.map((s) => { const l = lastOf(s); return `${s.label} ${l === undefined ? 'no data' : fmt(l)}`; }).join(', ')}`;
  return { n, constant, level, levelText, note, label };
}

/** Exponential moving average with TensorBoard's debiasing (the first points are not pulled toward 0); gaps stay gaps. */
export function ema(values: readonly number[], weight: number): Array<number | null> {
  let acc = 0;
  let norm = 0;
  return values.map((v) => {
    if (!Number.isFinite(v)) return null;
    acc = weight * acc + (1 - weight) * v;
    norm = weight * norm + (1 - weight);
    return acc / norm;
  });
}

const PLOT_H = 150;

/**
 * One training curve: uPlot on a canvas, created once and fed each step's grown arrays at most once per
 * animation frame. The x-range follows the run (the whole run, or a zoomed window that reached the newest
 * step slides along with it); a drag zooms, a double click shows the whole run again.
 */
export class AgentflowLineChart extends LitElement {
  static override properties = {
    chartTitle: { attribute: false },
    series: { attribute: false },
    options: { attribute: false },
    logScale: { state: true },
  };
  declare chartTitle: string;
  declare series: Series[];
  declare options: LineChartOptions;
  declare logScale: boolean;
  /** The chart once it has a width (it waits while its tab is hidden); tests read the drawing's geometry from it. */
  plot: uPlot | null = null;
  /** The y-axis labels uPlot last drew (the canvas has no text to read). */
  yTicks: string[] = [];
  private view: LineView = describeLine('', []);
  private frame = 0;
  private resize: ResizeObserver | null = null;
  private plotKey = '';
  /** Steps the chart held at its last draw, and whether the user's zoom (not the run) sets the x-range. */
  private lastX = 0;
  private zoomed = false;

  static override styles = [
    unsafeCSS(uplotCss),
    css`
      :host { display: block; min-width: 0; }
      figure { margin: 0; }
      .plot { overflow: hidden; min-height: ${PLOT_H}px; }
      .u-legend { font-size: 0.7rem; text-align: left; line-height: 1.2; }
      .u-legend th { font-weight: normal; }
      .u-legend .u-series { padding: 0 0.3rem 0 0; }
      .u-legend .u-marker { width: 0.7em; height: 0.7em; margin-right: 0.2em; }
      figcaption { font-size: 0.85rem; }
      label.log { font-size: 0.8rem; }
    `,
  ];

  constructor() {
    super();
    this.chartTitle = '';
    this.series = [];
    this.options = {};
    this.logScale = false;
  }

  protected override willUpdate(): void {
    this.view = describeLine(this.chartTitle, this.series, this.options);
  }

  override render() {
    const v = this.view;
    return html`<figure class="chart" part="chart">
      <figcaption>${this.chartTitle}${v.note ? html`<br /><small data-testid="flat-note">${v.note}</small>` : nothing}</figcaption>
      <div class="plot" role="img" aria-label=${v.label}></div>
      ${this.options.log
        ? html`<label class="log"><input type="checkbox" .checked=${this.logScale} @change=${(e: Event) => (this.logScale = (e.target as HTMLInputElement).checked)} />
            Log scale</label>`
        : nothing}
    </figure>`;
  }

  private get smoothing(): number {
    const w = this.options.smoothing ?? 0;
    return w > 0 && w < 1 ? w : 0;
  }

  /** y distribution: 1 linear, 3 log (all values > 0), 4 asinh (signed). A flat line stays linear: one level has no decades. */
  private get distr(): 1 | 3 | 4 {
    if (!this.logScale || !this.options.log || this.view.constant) return 1;
    return this.series.every((s) => s.values.every((v) => !Number.isFinite(v) || v > 0)) ? 3 : 4;
  }

  protected override updated(): void {
    const host = this.renderRoot.querySelector<HTMLElement>('.plot')!;
    if (!this.resize) {
      this.resize = new ResizeObserver(() => this.fit());
      this.resize.observe(host);
    }
    // What the series, axes and scales are made of; anything else is new data for the same chart.
    const key = [this.series.map((s) => s.label).join('\n'), this.smoothing > 0, this.distr, this.view.constant && this.view.level].join('|');
    if (this.plot && key !== this.plotKey) {
      this.plot.destroy();
      this.plot = null;
    }
    this.plotKey = key;
    if (!this.plot) this.create(host);
    else if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.resize?.disconnect();
    this.resize = null;
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.plot?.destroy();
    this.plot = null;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    // Back in the page (a remount): the chart is made again from the current data.
    if (this.hasUpdated) this.requestUpdate();
  }

  private fit(): void {
    const host = this.renderRoot.querySelector<HTMLElement>('.plot');
    if (!host) return;
    if (!this.plot) this.create(host);
    else if (host.clientWidth && host.clientWidth !== this.plot.width) this.plot.setSize({ width: host.clientWidth, height: PLOT_H });
  }

  /** The drawn arrays: step numbers, then per series its raw values (at the level, if flat) and, when smoothing, its EMA. */
  private data(): uPlot.AlignedData {
    const v = this.view;
    const w = this.smoothing;
    const given = this.options.x;
    const x = Array.from({ length: v.n }, (_, i) => given?.[i] ?? i + 1);
    const ys: Array<Array<number | null>> = [];
    for (const s of this.series) {
      const raw = s.values.map((y) => (Number.isFinite(y) ? (v.constant ? v.level : y) : null));
      ys.push(raw);
      // A sparse series is not smoothed (a few evaluations are no trend to average); its slot stays aligned.
      if (w) ys.push(v.constant || s.sparse ? raw : ema(s.values, w));
    }
    return [x, ...ys] as uPlot.AlignedData;
  }

  private create(host: HTMLElement): void {
    const width = host.clientWidth;
    if (!width || this.plot) return;
    const w = this.smoothing;
    const distr = this.distr;
    const colour = getComputedStyle(this).color || '#000';
    const grid = { stroke: 'rgba(128,128,128,0.2)', width: 1 };
    const series: uPlot.Series[] = [{ label: 'step' }];
    this.series.forEach((s, k) => {
      const c = s.color ?? PALETTE[k % PALETTE.length];
      // The read-out gives the value as recorded, even where the line is drawn at a flat level or smoothed.
      const raw = (_: uPlot, __: unknown, ___: number, i: number | null) => (i === null || !Number.isFinite(s.values[i]) ? '–' : fmt(s.values[i]));
      if (s.sparse) {
        series.push({ label: s.label, stroke: c, width: 1.5, spanGaps: true, points: { show: true, size: 6, fill: c }, value: raw });
        if (w) series.push({ label: `${s.label} (as measured)`, show: false, value: raw });
        return;
      }
      series.push({ label: s.label, stroke: w ? `${c}55` : c, width: w ? 1 : 1.5, points: { show: false }, value: raw });
      if (w) series.push({ label: `${s.label} (smoothed)`, stroke: c, width: 2, points: { show: false }, value: (_, y) => (y === null || y === undefined ? '–' : fmt(y)) });
    });
    const v = () => this.view;
    const opts: uPlot.Options = {
      width,
      height: PLOT_H,
      series,
      scales: {
        // One step has no span: give it one, centred.
        x: { time: false, range: (_, min, max) => (min === max ? [min - 1, max + 1] : [min, max]) },
        y: {
          distr,
          // asinh is linear within zeroBelow of 0: below that a value is noise, not a decade.
          asinh: this.options.zeroBelow ?? 1e-6,
          range: (_, min, max) => {
            if (v().constant) return [v().level - 1, v().level + 1];
            if (distr === 3) return uPlot.rangeLog(min, max, 10, true);
            if (distr === 4) return uPlot.rangeAsinh(min, max, 10, true);
            return uPlot.rangeNum(min, max, 0.1, true);
          },
        },
      },
      axes: [
        { stroke: colour, grid, label: 'step', labelSize: 14, size: 30, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000] },
        {
          stroke: colour,
          grid,
          // As wide as its longest label (uPlot's fixed 50 px cuts "1.0e-6" and wastes room beside "0.5").
          size: (_, values) => 12 + 6.5 * Math.max(3, ...(values ?? []).map((t) => t.length)),
          // Ticks 20 px apart (uPlot's default is 30): three to five values on a 150 px chart.
          space: 20,
          ...(v().constant ? { splits: () => [v().level] } : {}),
          values: (u, splits) => {
            const span = (u.scales.y.max ?? 1) - (u.scales.y.min ?? 0);
            // On a log axis only the decades are labelled (the ticks between them, 2e-6, 3e-6…, mark the scale),
            // each as itself: 1e-7 under a top of 1 is a decade, not float noise.
            const decade = (t: number) => distr === 1 || t === 0 || Math.abs(Math.log10(Math.abs(t)) % 1) < 1e-9;
            this.yTicks = v().constant ? splits.map(() => v().levelText) : splits.map((t) => (distr === 1 ? fmtBound(t, span) : decade(t) ? fmt(t) : ''));
            return this.yTicks;
          },
        },
      ],
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: {
        // The user zoomed when the x-range is narrower than the run (a double click's reset widens it again).
        setScale: [
          (u, key) => {
            if (key !== 'x') return;
            this.zoomed = (u.scales.x.min ?? 0) > 1 || (u.scales.x.max ?? 0) < this.lastX;
          },
        ],
      },
    };
    const data = this.data();
    this.lastX = this.lastStep();
    this.zoomed = false;
    this.plot = new uPlot(opts, data, host);
    this.markDrawn(data);
  }

  private flush(): void {
    this.frame = 0;
    const u = this.plot;
    if (!u) return;
    const data = this.data();
    const before = this.lastX;
    const now = this.lastStep();
    if (!this.zoomed) {
      this.lastX = now;
      u.setData(data, true);
    } else {
      const { min, max } = u.scales.x;
      u.setData(data, false);
      this.lastX = now;
      // A zoomed window that showed the newest step moves along with the run, keeping its width.
      if (min !== undefined && max !== undefined && max >= before && now > before) u.setScale('x', { min: min + now - before, max: now });
    }
    this.markDrawn(data);
  }

  /** The newest step drawn (the x of the last value). */
  private lastStep(): number {
    const n = this.view.n;
    return this.options.x?.[n - 1] ?? n;
  }

  /** Points each series has on the canvas, for anyone checking the chart without reading pixels. */
  private markDrawn(data: uPlot.AlignedData): void {
    const step = this.smoothing ? 2 : 1;
    const counts = this.series.map((_, k) => (data[1 + k * step] as Array<number | null>).filter((y) => y !== null).length);
    this.renderRoot.querySelector<HTMLElement>('.plot')!.dataset.points = counts.join(',');
  }
}

if (!customElements.get('agentflow-line-chart')) customElements.define('agentflow-line-chart', AgentflowLineChart);

/** A line chart of one or more series against the step (1, 2, …); see AgentflowLineChart and describeLine. */
export function lineChart(title: string, series: Series[], o: LineChartOptions = {}): TemplateResult {
  return html`<agentflow-line-chart .chartTitle=${title} .series=${series} .options=${o}></agentflow-line-chart>`;
}

export interface Bar {
  label: string;
  value: number;
  color?: string;
}

/** Horizontal bar chart; `max` fixes the scale (e.g. 1 for accuracy). */
export function barChart(title: string, bars: Bar[], max?: number, format: (v: number) => string = fmt): TemplateResult {
  const top = max ?? Math.max(1e-9, ...bars.map((b) => b.value));
  const rowH = 18;
  const h = Math.max(rowH, bars.length * rowH) + 4;
  const labelW = 110;
  return html`<figure class="chart" part="chart">
    <svg viewBox="0 0 ${W} ${h}" style="width:100%;height:auto" role="img" aria-label=${`${title}: ${bars.map((b) => `${b.label} ${format(b.value)}`).join(', ') || 'no data'}`}>
      ${bars.map((b, i) => {
        const w = Math.max(0, Math.min(1, b.value / top)) * (W - labelW - 50);
        return svg`<text x="0" y=${i * rowH + 13} font-size="10" fill="currentColor"><title>${b.label}</title>${b.label.length > 18 ? b.label.slice(0, 17) + '…' : b.label}</text>
          <rect x=${labelW} y=${i * rowH + 3} width=${w.toFixed(1)} height=${rowH - 6} fill=${b.color ?? PALETTE[i % PALETTE.length]}></rect>
          <text x=${labelW + w + 4} y=${i * rowH + 13} font-size="10" fill="currentColor">${format(b.value)}</text>`;
      })}
    </svg>
    <figcaption>${title}</figcaption>
  </figure>`;
}
