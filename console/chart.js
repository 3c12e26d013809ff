// The history chart: uPlot (about 50 KB, loaded only when an asset page opens). Drag across the
// plot to zoom in; the buttons pan and zoom out. Each new window is fetched again: raw points for
// short windows, aggregates (min / avg / max per bucket) for long ones.
import { useEffect, useRef } from 'preact/hooks';
import { html } from './ui.js';

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

/** `series`: {x: seconds[], lines: [{label, values}]}; onZoom(fromMs, toMs) after a drag. */
export function Chart({ series, onZoom, label }) {
  const box = useRef();
  const plot = useRef();
  useEffect(() => {
    let gone = false;
    loadUplot().then((uPlot) => {
      if (gone || !box.current) return;
      plot.current?.destroy();
      const colors = ['#0b5cad', '#8a5a00', '#2f7d32'];
      const options = {
        width: Math.max(280, box.current.clientWidth),
        height: 260,
        series: [{}, ...series.lines.map((l, i) => ({ label: l.label, stroke: colors[i % colors.length], width: i === 0 ? 2 : 1, points: { show: series.x.length < 60 } }))],
        axes: [{ stroke: '#333' }, { stroke: '#333' }],
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
  }, [series]);
  useEffect(() => () => plot.current?.destroy(), []);
  return html`<div class="chart" ref=${box} role="img" aria-label=${label} data-testid="chart"></div>`;
}
