// Small inline SVG charts (no chart library): a line chart for training curves and a bar chart for
// accuracy and tool use. Values are drawn as given; NaN/Infinity points are skipped, not plotted at 0.
import { svg, html, nothing, type TemplateResult } from 'lit';

export interface Series {
  label: string;
  values: number[];
  color?: string;
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];
const W = 320;
const H = 120;
const PAD = 28;

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
}

/**
 * Line chart of one or more series against the step index. The axis spans the data; a series that does not
 * change (or stays within `zeroBelow` of 0) is drawn as one labelled line, and the caption says what that
 * means, instead of stretching invented bounds (±0.5) or noise (±1e-8) over the whole height.
 */
export function lineChart(title: string, series: Series[], o: LineChartOptions = {}): TemplateResult {
  const finite = series.flatMap((s) => s.values.filter(Number.isFinite));
  const n = Math.max(0, ...series.map((s) => s.values.length));
  let lo = finite.length ? Math.min(...finite) : 0;
  let hi = finite.length ? Math.max(...finite) : 1;
  const nearZero = o.zeroBelow !== undefined && finite.length > 0 && Math.max(Math.abs(lo), Math.abs(hi)) < o.zeroBelow;
  // One level for the whole axis; said in words only once there are two steps (one point is not a line).
  const constant = finite.length > 0 && (hi === lo || nearZero);
  const flat = constant && n >= 2;
  const level = nearZero ? 0 : lo;
  if (constant) {
    lo = level - 1;
    hi = level + 1;
  }
  const x = (i: number) => PAD + (n <= 1 ? 0 : (i / (n - 1)) * (W - PAD - 6));
  const y = (v: number) => H - 16 - ((v - lo) / (hi - lo)) * (H - 26);
  const paths = series.map((s, k) => {
    let d = '';
    let pen = false;
    s.values.forEach((v, i) => {
      if (!Number.isFinite(v)) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(constant ? level : v).toFixed(1)}`;
      pen = true;
    });
    return svg`<path d=${d || 'M0,0'} fill="none" stroke=${s.color ?? PALETTE[k % PALETTE.length]} stroke-width="1.5"></path>`;
  });
  const last = series.map((s) => s.values.filter(Number.isFinite).at(-1));
  const levelText = nearZero ? '≈ 0' : fmt(level);
  const meaning = flat ? o.flat?.(level) : null;
  const note = flat
    ? `${nearZero ? `all ≈ 0 (every |value| < ${fmt(o.zeroBelow!)})` : `all ${levelText}`}${meaning ? `: ${meaning}` : ` over ${n} step${n === 1 ? '' : 's'}`}`
    : null;
  return html`<figure class="chart" part="chart">
    <svg viewBox="0 0 ${W} ${H}" style="width:100%;height:auto" role="img" aria-label=${`${title}: ${note ?? series.map((s, k) => `${s.label} ${last[k] === undefined ? 'no data' : fmt(last[k]!)}`).join(', ')}`}>
      <line x1=${PAD} y1=${H - 16} x2=${W - 4} y2=${H - 16} stroke="currentColor" stroke-opacity="0.3"></line>
      <line x1=${PAD} y1="8" x2=${PAD} y2=${H - 16} stroke="currentColor" stroke-opacity="0.3"></line>
      ${constant
        ? svg`<text class="tick" x="2" y=${y(level) + 3} font-size="9" fill="currentColor">${levelText}</text>`
        : svg`<text class="tick" x="2" y="14" font-size="9" fill="currentColor">${fmtBound(hi, hi - lo)}</text>
            <text class="tick" x="2" y=${H - 16} font-size="9" fill="currentColor">${fmtBound(lo, hi - lo)}</text>`}
      <text x=${W - 4} y=${H - 3} font-size="9" text-anchor="end" fill="currentColor">${n} steps</text>
      ${paths}
    </svg>
    <figcaption>${title}${series.length > 1 ? html`: ${series.map((s, k) => html`<span style="color:${s.color ?? PALETTE[k % PALETTE.length]}">■</span> ${s.label} `)}` : ''}${note
      ? html`<br /><small data-testid="flat-note">${note}</small>`
      : nothing}</figcaption>
  </figure>`;
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
