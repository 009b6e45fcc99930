import { IDeviceSeries } from './protocol';
import { formatBytes } from './units';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 420;
const HEIGHT = 160;
const MARGIN = { left: 64, right: 12, top: 10, bottom: 34 };

/**
 * A device's memory over the failed run: the device's used memory and the framework
 * allocator's, against the device's total, seconds on the x axis and bytes on the y axis.
 * Colours come from the theme's CSS variables (classes in style/base.css).
 */
export function memoryChart(series: IDeviceSeries): SVGSVGElement {
  const svg = element('svg', {
    class: 'jp-GpuGuard-chart',
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: 'img',
    'aria-label': `Memory of ${series.name} during the run`
  }) as SVGSVGElement;
  const values = [
    ...series.device_used_bytes,
    ...series.allocator_bytes,
    series.total_bytes
  ].filter((v): v is number => v !== null);
  const maxY = niceCeiling(Math.max(1, ...values));
  const maxX = Math.max(1e-3, ...series.elapsed_s);
  const x = (t: number) => MARGIN.left + (t / maxX) * (WIDTH - MARGIN.left - MARGIN.right);
  const y = (v: number) =>
    HEIGHT - MARGIN.bottom - (v / maxY) * (HEIGHT - MARGIN.top - MARGIN.bottom);

  for (let i = 0; i <= 4; i++) {
    const value = (maxY * i) / 4;
    svg.append(
      element('line', {
        class: 'jp-GpuGuard-chart-grid',
        x1: x(0),
        x2: x(maxX),
        y1: y(value),
        y2: y(value)
      }),
      text(formatBytes(value), MARGIN.left - 6, y(value) + 4, 'end')
    );
  }
  for (let i = 0; i <= 4; i++) {
    const t = (maxX * i) / 4;
    svg.append(text(`${t.toFixed(t < 10 ? 1 : 0)} s`, x(t), HEIGHT - MARGIN.bottom + 16, 'middle'));
  }
  svg.append(
    element('line', { class: 'jp-GpuGuard-chart-axis', x1: x(0), x2: x(0), y1: y(0), y2: y(maxY) }),
    element('line', { class: 'jp-GpuGuard-chart-axis', x1: x(0), x2: x(maxX), y1: y(0), y2: y(0) }),
    text('time since the cell started', (x(0) + x(maxX)) / 2, HEIGHT - 4, 'middle')
  );
  if (series.total_bytes !== null) {
    svg.append(
      element('line', {
        class: 'jp-GpuGuard-chart-total',
        x1: x(0),
        x2: x(maxX),
        y1: y(series.total_bytes),
        y2: y(series.total_bytes)
      })
    );
  }
  svg.append(
    line(series.elapsed_s, series.device_used_bytes, x, y, 'jp-GpuGuard-chart-device'),
    line(series.elapsed_s, series.allocator_bytes, x, y, 'jp-GpuGuard-chart-allocator')
  );
  return svg;
}

/** The chart's legend, as HTML next to it. */
export function chartLegend(series: IDeviceSeries): HTMLElement {
  const legend = document.createElement('div');
  legend.className = 'jp-GpuGuard-legend';
  const entries: [string, string][] = [
    ['jp-GpuGuard-chart-device', 'device used'],
    ['jp-GpuGuard-chart-allocator', `${series.framework ?? 'framework'} allocator`],
    ['jp-GpuGuard-chart-total', `total ${formatBytes(series.total_bytes)}`]
  ];
  for (const [cls, label] of entries) {
    const item = document.createElement('span');
    const swatch = document.createElement('span');
    swatch.className = `jp-GpuGuard-swatch ${cls}`;
    item.append(swatch, label);
    legend.append(item);
  }
  return legend;
}

function line(
  times: number[],
  values: (number | null)[],
  x: (t: number) => number,
  y: (v: number) => number,
  cls: string
): SVGElement {
  const points = times
    .map((t, i) => [t, values[i]] as const)
    .filter((p): p is readonly [number, number] => p[1] !== null)
    .map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
  return element('polyline', { class: cls, points: points.join(' '), fill: 'none' });
}

function text(content: string, x: number, y: number, anchor: string): SVGElement {
  const node = element('text', { x, y, 'text-anchor': anchor, class: 'jp-GpuGuard-chart-label' });
  node.textContent = content;
  return node;
}

function element(name: string, attributes: Record<string, string | number>): SVGElement {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) {
    node.setAttribute(key, String(value));
  }
  return node;
}

/** The y axis' top: a round number of GiB (or MiB) at or above `value`. */
function niceCeiling(value: number): number {
  const unit = value >= 2 ** 30 ? 2 ** 30 : 2 ** 20;
  const steps = [1, 2, 4, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256];
  const scaled = value / unit;
  const step = steps.find(s => s >= scaled) ?? Math.ceil(scaled);
  return step * unit;
}
