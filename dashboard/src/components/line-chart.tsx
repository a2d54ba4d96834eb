/** One line of a chart: its key, its legend and its colour. */
export type Series<K extends string> = readonly [key: K, label: string, color: string];

/** One point on the x axis: its label and each series' value there. */
export type ChartRow<K extends string> = { label: string } & Record<K, number>;

/**
 * A line per series over the rows, with a dot per row (its value in its title and `data-` attributes), as inline
 * SVG with its legend. `max` is the top of the y axis; `unit` follows each value (`%`).
 */
export function LineChart<K extends string>(o: {
  id: string;
  title: string;
  rows: ChartRow<K>[];
  series: readonly Series<K>[];
  max: number;
  unit?: string;
  class?: string;
}) {
  const { rows, series, max, unit = '' } = o;
  const W = 600;
  const H = 200;
  const PAD = 32;
  const x = (i: number) => (rows.length === 1 ? W / 2 : PAD + (i * (W - PAD - 8)) / (rows.length - 1));
  const y = (v: number) => H - PAD - (v * (H - PAD - 8)) / Math.max(1, max);
  return (
    <figure class={`chart ${o.class ?? ''}`}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={o.id}>
        <title id={o.id}>{o.title}</title>
        <line x1={PAD} y1={H - PAD} x2={W - 8} y2={H - PAD} class="axis" />
        <line x1={PAD} y1={8} x2={PAD} y2={H - PAD} class="axis" />
        <text x={PAD - 4} y={12} class="tick" text-anchor="end">
          {`${max}${unit}`}
        </text>
        <text x={PAD - 4} y={H - PAD} class="tick" text-anchor="end">
          {`0${unit}`}
        </text>
        <text x={PAD} y={H - 8} class="tick">
          {rows[0].label}
        </text>
        <text x={W - 8} y={H - 8} class="tick" text-anchor="end">
          {rows[rows.length - 1].label}
        </text>
        {series.map(([key, label, color]) => (
          <g key={key} data-series={key}>
            <polyline
              fill="none"
              stroke={color}
              stroke-width="2"
              points={rows.map((r, i) => `${x(i).toFixed(1)},${y(r[key]).toFixed(1)}`).join(' ')}
            />
            {rows.map((r, i) => (
              <circle
                key={r.label}
                cx={x(i).toFixed(1)}
                cy={y(r[key]).toFixed(1)}
                r="3"
                fill={color}
                data-day={r.label}
                data-rate={r[key]}
              >
                <title>{`${r.label}: ${label} ${r[key]}${unit}`}</title>
              </circle>
            ))}
          </g>
        ))}
      </svg>
      <figcaption class="legend">
        {series.map(([key, label, color]) => (
          <span key={key}>
            <i style={{ background: color }} /> {label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
