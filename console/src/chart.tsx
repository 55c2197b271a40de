import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { bucketLabel, Line, summarize } from './series';

/**
 * A uPlot line chart (canvas, hidden from assistive technology) with its text
 * alternatives: a one-sentence summary per line that a screen reader reads as the
 * figure's caption, and the full data as a table behind a keyboard-reachable
 * disclosure.
 */
export function Chart({
  title,
  xs,
  lines,
  unit,
  withDay,
  test,
}: {
  title: string;
  xs: number[];
  lines: Line[];
  unit: string;
  withDay: boolean;
  test: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const plot = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 180,
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true } },
        axes: [{}, { size: 56 }],
        series: [{ label: 'time (UTC)' }, ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2 }))],
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      },
      [xs, ...lines.map((l) => l.values)],
      el,
    );
    return () => plot.destroy();
  }, [xs, lines]);
  const headingId = `chart-${test}`;
  return (
    <figure class="chart" data-test={test} aria-labelledby={headingId}>
      <figcaption>
        <h3 id={headingId}>{title}</h3>
        <p class="chart-summary muted" data-test={`${test}-summary`}>
          {summarize(xs, lines, unit, withDay)}
        </p>
      </figcaption>
      <div ref={box} class="chart-plot" aria-hidden="true" />
      <details>
        <summary>Data table: {title.toLowerCase()}</summary>
        <table data-test={`${test}-table`}>
          <caption class="muted">{title}, per bucket (UTC)</caption>
          <thead>
            <tr>
              <th scope="col">time</th>
              {lines.map((l) => (
                <th scope="col" key={l.label}>
                  {l.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {xs.map((x, i) => (
              <tr key={x}>
                <th scope="row">{bucketLabel(x, withDay)}</th>
                {lines.map((l) => (
                  <td key={l.label}>{l.values[i] ?? '–'}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
