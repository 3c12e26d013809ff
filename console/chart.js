// The history chart: uPlot (about 50 KB, loaded only when an asset page opens). Drag across the
// plot to zoom in; the buttons pan and zoom out. Each new window is fetched again: raw points for
// short windows, aggregates (min / avg / max per bucket) for long ones. The x axis spans the
// window chosen, not the data in it: "Last 1 h" with a minute of readings shows the whole hour.
import { useEffect, useRef } from 'preact/hooks';
import { html } from './ui.js';
import { tickLabels, tickStep, timeTicks } from './timeAxis.js';

/** Room for one time label, px. */
const TICK_SPACE = 90;

let loading;
function loadUplot() {
  loading ??= new Promise((resolve, reject) => {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = './vendor/uplot.css';
    document.head.append(css);
    const script = document.createElement('script');
    script.src = './vendor/uplot.js';
    script.onload = () => resolve(window.uPlot);
    script.onerror = () => reject(new Error('the chart library did not load'));
    document.head.append(script);
  });
  return loading;
}

/** The x axis: the window [fromMs, toMs], ticks on round local times; `shown` hears the ticks drawn. */
function timeAxis(fromMs, toMs, width, shown) {
  const step = tickStep(fromMs, toMs, Math.max(2, Math.floor(width / TICK_SPACE)));
  const ticks = timeTicks(fromMs, toMs, step);
  shown(ticks);
  return {
    scale: { time: true, range: () => [fromMs / 1000, toMs / 1000] },
    axis: { stroke: '#333', space: TICK_SPACE, splits: () => ticks.map((t) => t / 1000), values: () => tickLabels(ticks, step) },
  };
}

/**
 * `series`: {x: seconds[], lines: [{label, values}]}; `window`: {from, to} in epoch ms, the x axis;
 * onZoom(fromMs, toMs) after a drag, in whole milliseconds.
 */
export function Chart({ series, window: span, onZoom, label }) {
  const box = useRef();
  const plot = useRef();
  useEffect(() => {
    let gone = false;
    loadUplot().then((uPlot) => {
      if (gone || !box.current) return;
      plot.current?.destroy();
      const colors = ['#0b5cad', '#8a5a00', '#2f7d32'];
      const width = Math.max(280, box.current.clientWidth);
      // The window and ticks drawn, on the element: what a test (or a person inspecting it) reads back.
      const x = timeAxis(span.from, span.to, width - 60, (ticks) => {
        box.current.dataset.from = String(span.from);
        box.current.dataset.to = String(span.to);
        box.current.dataset.ticks = ticks.join(',');
      });
      const options = {
        width,
        height: 260,
        series: [{}, ...series.lines.map((l, i) => ({ label: l.label, stroke: colors[i % colors.length], width: i === 0 ? 2 : 1, points: { show: series.x.length < 60 } }))],
        scales: { x: x.scale },
        axes: [x.axis, { stroke: '#333' }],
        cursor: { drag: { x: true, y: false, setScale: false } },
        hooks: {
          setSelect: [(u) => {
            if (u.select.width < 4) return;
            const from = u.posToVal(u.select.left, 'x') * 1000;
            const to = u.posToVal(u.select.left + u.select.width, 'x') * 1000;
            u.setSelect({ width: 0, height: 0 }, false);
            onZoom(Math.round(from), Math.round(to));
          }],
        },
      };
      plot.current = new uPlot(options, [series.x, ...series.lines.map((l) => l.values)], box.current);
    });
    return () => { gone = true; };
  }, [series, span.from, span.to]);
  useEffect(() => () => plot.current?.destroy(), []);
  return html`<div class="chart" ref=${box} role="img" aria-label=${label} data-testid="chart"></div>`;
}
