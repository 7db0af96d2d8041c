// The end-to-end bench's SVG chart: one panel per metric (prefill, decode at depth 0, decode at
// depth 512), one pair of bars per model (kiln and the peer), the value at the end of each bar.

export interface ChartSeries {
  label: string;
  color: string;
}

export interface ChartGroup {
  /** The model. */
  label: string;
  /** One value per series per metric: values[metric][series]; NaN when not measured. */
  values: number[][];
}

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function barChart(title: string, subtitle: string, metrics: string[], series: ChartSeries[], groups: ChartGroup[]): string {
  const panelWidth = 300, labelWidth = 190, bar = 14, gap = 10, top = 70;
  const groupHeight = series.length * bar + gap;
  const height = top + groups.length * groupHeight + 50;
  const width = labelWidth + metrics.length * panelWidth + 20;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<text x="10" y="38" fill="#555">${escape(subtitle)}</text>`,
  ];
  groups.forEach((g, gi) => {
    out.push(`<text x="10" y="${top + gi * groupHeight + series.length * bar / 2 + 4}">${escape(g.label)}</text>`);
  });
  metrics.forEach((metric, mi) => {
    const x0 = labelWidth + mi * panelWidth;
    const max = Math.max(...groups.flatMap((g) => g.values[mi]!.filter(Number.isFinite)), 1e-9);
    const scale = (panelWidth - 70) / max;
    out.push(`<text x="${x0}" y="${top - 12}" font-weight="bold">${escape(metric)}</text>`);
    out.push(`<line x1="${x0}" y1="${top - 4}" x2="${x0}" y2="${top + groups.length * groupHeight - gap + 4}" stroke="#999"/>`);
    groups.forEach((g, gi) => {
      series.forEach((s, si) => {
        const v = g.values[mi]![si]!;
        if (!Number.isFinite(v)) return;
        const y = top + gi * groupHeight + si * bar;
        const w = Math.max(1, v * scale);
        out.push(`<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${bar - 2}" fill="${s.color}"/>`);
        out.push(`<text x="${(x0 + w + 4).toFixed(1)}" y="${y + bar - 4}" font-size="11">${v.toFixed(1)}</text>`);
      });
    });
  });
  const legendY = height - 20;
  series.forEach((s, si) => {
    out.push(`<rect x="${10 + si * 160}" y="${legendY - 10}" width="12" height="12" fill="${s.color}"/>`);
    out.push(`<text x="${28 + si * 160}" y="${legendY}">${escape(s.label)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
