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

/** How a chart's y axis is scaled. */
export interface Scale {
  /**
   * The least top of the y axis. 1 (the default) suits counts, rates and milliseconds: a lone request is not
   * drawn at the very top, and the ticks stay whole numbers. 0 scales the axis to the data alone, for values
   * that are often all below 1 (money: a bucket's cost can be 0.0002, which a 0–1 axis draws as a flat 0).
   */
  readonly floor?: number;
}

/** The y axis's extent for the data's `min` and `max` (null: no data). */
export function yRange(min: number | null, max: number | null, floor = 1): [number, number] {
  const top = Math.max(floor, max ?? 0);
  // All zero (or no data) with no floor: a 0–1 axis, not a degenerate one.
  return [Math.min(0, min ?? 0), (top > 0 ? top : 1) * 1.05];
}

/** Pixels per character of an axis label (uPlot's 12 px font), and the tick and padding beside them. */
const LABEL_CHAR_PX = 7;
const AXIS_PAD_PX = 18;

/**
 * A chart figure over `x` (epoch seconds). `format` writes the y axis's values. The chart follows its
 * figure's width. The y axis's tick labels as drawn are on the figure (`data-y-ticks`, space-separated) and
 * in the canvas's label, so a screen reader or a test can read the scale without reading pixels.
 */
export function chartFigure(
  caption: string,
  x: number[],
  lines: readonly Line[],
  points: number,
  format: (value: number) => string,
  scale: Scale = {},
): HTMLElement {
  const plot = h("div", { class: "plot" });
  const canvasOf = () => plot.querySelector("canvas");
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
    scales: { y: { range: (_u, min, max) => yRange(min, max, scale.floor) } },
    axes: [
      { stroke: "#57606a", grid: { stroke: "#eaeef2" } },
      {
        stroke: "#57606a",
        grid: { stroke: "#eaeef2" },
        // Wide enough for the longest label (a small amount's "0.00015").
        size: (_u, values) =>
          Math.max(64, Math.max(0, ...(values ?? []).map((v) => v.length)) * LABEL_CHAR_PX + AXIS_PAD_PX),
        values: (_u, values) => {
          const labels = values.map((v) => format(v));
          const ticks = labels.join(" ");
          if (figure.dataset.yTicks !== ticks) {
            figure.dataset.yTicks = ticks;
            canvasOf()?.setAttribute(
              "aria-label",
              `${caption} chart, y axis ${labels[0] ?? ""} to ${labels[labels.length - 1] ?? ""}`,
            );
          }
          return labels;
        },
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
  const ticks = figure.dataset.yTicks?.split(" ") ?? [];
  const extent = ticks.length === 0 ? "" : `, y axis ${ticks[0]} to ${ticks[ticks.length - 1]}`;
  canvasOf()?.setAttribute("aria-label", `${caption} chart${extent}`);
  canvasOf()?.setAttribute("role", "img");
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
