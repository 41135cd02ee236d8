/**
 * A time-binned result as a chart (uPlot): lines, or bars stacked per group; hovering shows each series'
 * value at that time in the legend, and dragging across the chart zooms the query's time range to it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { chartData, stacked, type ChartData } from './chart-data';
import type { TabularTable } from './api';

const COLORS = ['#2f6fdf', '#e0663b', '#2aa876', '#b04fc4', '#d4a514', '#3bb3c4', '#c43b5a', '#6b7a8f'];

export function ResultChart(p: { table: TabularTable; onZoom(start: Date, end: Date): void }) {
  const host = useRef<HTMLDivElement>(null);
  const [mode, setMode] = useState<'line' | 'bars'>('line');
  const data = chartData(p.table);
  const zoom = useRef(p.onZoom);
  zoom.current = p.onZoom;

  useEffect(() => {
    if (!data || !host.current) return;
    const shown: ChartData = mode === 'bars' ? stacked(data) : data;
    // Stacked, the highest (the sum of all) is drawn first, so each lower series stays in front of it.
    const ordered = mode === 'bars' ? [...shown.series].reverse() : shown.series;
    const bars = uPlot.paths.bars!({ size: [0.8, 40] });
    const plot = new uPlot(
      {
        width: Math.max(320, host.current.clientWidth),
        height: 260,
        cursor: { drag: { x: true, y: false, setScale: false } },
        series: [
          {},
          ...ordered.map((s, i) => ({
            label: s.label,
            stroke: COLORS[i % COLORS.length],
            fill: mode === 'bars' ? `${COLORS[i % COLORS.length]}cc` : undefined,
            paths: mode === 'bars' ? bars : undefined,
            points: { show: shown.times.length < 60 },
          })),
        ],
        hooks: {
          setSelect: [
            (u) => {
              if (u.select.width < 2) return;
              const from = u.posToVal(u.select.left, 'x');
              const to = u.posToVal(u.select.left + u.select.width, 'x');
              zoom.current(new Date(from * 1000), new Date(to * 1000));
            },
          ],
        },
      },
      [shown.times, ...ordered.map((s) => s.values)] as uPlot.AlignedData,
      host.current,
    );
    host.current.dataset.points = String(shown.times.length);
    host.current.dataset.series = String(shown.series.length);
    return () => plot.destroy();
  }, [p.table, mode]);

  if (!data) return null;
  return (
    <div class="chart">
      <div class="chart-bar">
        <label>
          <input type="radio" name="chart-mode" checked={mode === 'line'} onChange={() => setMode('line')} /> Lines
        </label>
        <label>
          <input type="radio" name="chart-mode" checked={mode === 'bars'} onChange={() => setMode('bars')} /> Stacked
          bars
        </label>
        <span class="hint">Drag across the chart to zoom into that time.</span>
      </div>
      <div ref={host} data-testid="chart" />
    </div>
  );
}
