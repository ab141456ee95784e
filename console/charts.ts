/// <reference lib="dom" />
/**
 * Time-series charts (uPlot: ~50 KB, canvas, no dependencies). Each chart is a `figure` with a `figcaption`
 * and `data-points` (buckets with data), so a reader or a test can tell an empty chart from a drawn one
 * without reading pixels; the numbers are also in the view's tables.
 *
 * @module
 */
import uPlot from "uplot";
import { h } from "./dom.ts";

/** One line of a chart. */
export interface Line {
  readonly label: string;
  readonly values: (number | null)[];
  readonly color: string;
  /**
   * Draw across buckets without data (for rates and latencies, which have no value there rather than 0): else
   * a lone bucket of a long range would be invisible.
   */
  readonly spanGaps?: boolean;
}

/** Colours with enough contrast on white, told apart by hue and, in the legend, by name. */
export const COLORS = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df"] as const;

const HEIGHT = 180;

/**
 * A chart figure over `x` (epoch seconds). `format` writes the y axis's values. The chart follows its
 * figure's width.
 */
export function chartFigure(
  caption: string,
  x: number[],
  lines: readonly Line[],
  points: number,
  format: (value: number) => string,
): HTMLElement {
  const plot = h("div", { class: "plot" });
  const legend = lines.length < 2 ? null : h(
    "ul",
    { class: "legend" },
    lines.map((line) => {
      const swatch = h("span", { class: "swatch", "aria-hidden": "true" });
      swatch.style.backgroundColor = line.color;
      return h("li", {}, swatch, line.label);
    }),
  );
  const figure = h(
    "figure",
    { class: "chart", "data-points": points },
    h("figcaption", {}, caption),
    plot,
    legend,
  );
  const options: uPlot.Options = {
    width: 560,
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: { y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1) * 1.05] } },
    axes: [
      { stroke: "#57606a", grid: { stroke: "#eaeef2" } },
      {
        stroke: "#57606a",
        grid: { stroke: "#eaeef2" },
        size: 64,
        values: (_u, values) => values.map((v) => format(v)),
      },
    ],
    series: [
      {},
      ...lines.map((line) => ({
        label: line.label,
        stroke: line.color,
        width: 2,
        spanGaps: line.spanGaps ?? false,
        // Markers where a line has few points (or a gap-spanning line would hide a lone value).
        points: { show: x.length <= 31 || line.values.filter((v) => v !== null).length < 3 },
      })),
    ],
  };
  const chart = new uPlot(options, [x, ...lines.map((line) => line.values)] as uPlot.AlignedData, plot);
  chart.root.querySelector("canvas")?.setAttribute("aria-label", `${caption} chart`);
  chart.root.querySelector("canvas")?.setAttribute("role", "img");
  const resize = new ResizeObserver(() => {
    if (!figure.isConnected) {
      resize.disconnect();
      chart.destroy();
      return;
    }
    const width = Math.floor(plot.clientWidth);
    if (width > 0 && width !== chart.width) chart.setSize({ width, height: HEIGHT });
  });
  resize.observe(plot);
  return figure;
}
