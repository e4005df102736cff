/**
 * A small SVG renderer for the benchmarks' charts (no dependency, plain strings): panels of stacked bars and lines
 * over windows, a dashed horizontal quota line, axis labels and a legend. A white background of its own, so that it
 * reads the same in GitHub's light and dark themes; a `<title>` and `<desc>` for screen readers.
 */

/** One series: a value per window (`null`: none, a gap in a line). Bars stack in the order given; lines draw over. */
export interface Series {
  readonly name: string
  readonly color: string
  readonly kind: "bar" | "line"
  readonly values: ReadonlyArray<number | null>
}

/** One chart of a figure. */
export interface Panel {
  readonly title: string
  readonly yLabel: string
  readonly xLabel: string
  readonly series: ReadonlyArray<Series>
  /** A horizontal line across the plot, e.g. the quota per window. */
  readonly quota?: { readonly value: number; readonly label: string } | undefined
  /** The top of the y axis before rounding up (panels that should compare share it); else from the data. */
  readonly yMax?: number | undefined
  /** The number of windows on the x axis (panels that should compare share it); else from the data. */
  readonly windows?: number | undefined
}

/** A figure: one SVG of panels in a grid. */
export interface Figure {
  /** Prefix of the ids inside the SVG. */
  readonly id: string
  readonly title: string
  /** What the figure shows, in words (the `<desc>`). */
  readonly description: string
  readonly columns: number
  readonly panels: ReadonlyArray<Panel>
}

/** The size of a panel and where its plot area sits inside it. */
export const layout = {
  width: 480,
  height: 320,
  top: 40,
  right: 20,
  bottom: 84,
  left: 64,
  header: 44
} as const

const plotWidth = layout.width - layout.left - layout.right
const plotHeight = layout.height - layout.top - layout.bottom
const font = "font-family=\"system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\""
const ink = "#1f2937"
const faint = "#6b7280"

/** Text safe inside an element or a double-quoted attribute. */
export const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A number for an attribute: at most two decimals. */
const n = (value: number): string => String(Math.round(value * 100) / 100)

/** A round step for about `count` ticks up to `max`: 1, 2 or 5 times a power of ten. */
export const niceStep = (max: number, count = 5): number => {
  const raw = Math.max(max, 1) / count
  const power = 10 ** Math.floor(Math.log10(raw))
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw)!
}

/** The top of the y axis: the largest stack, line value or quota (with room above it), rounded up to a step. */
export const yTop = (panel: Panel): number => {
  const max = Math.max(1, panel.yMax ?? 0, (panel.quota?.value ?? 0) * 1.1, ...stackTotals(panel), ...lineValues(panel))
  const step = niceStep(max)
  return Math.ceil(max / step) * step
}

const bars = (panel: Panel) => panel.series.filter((s) => s.kind === "bar")
const lines = (panel: Panel) => panel.series.filter((s) => s.kind === "line")
const lineValues = (panel: Panel) => lines(panel).flatMap((s) => s.values.filter((v): v is number => v !== null))

/** The height of each window's stack of bars. */
const stackTotals = (panel: Panel): Array<number> =>
  Array.from({ length: windowsOf(panel) }, (_, i) => bars(panel).reduce((sum, s) => sum + (s.values[i] ?? 0), 0))

/** The windows on the x axis. */
export const windowsOf = (panel: Panel): number =>
  Math.max(1, panel.windows ?? 0, ...panel.series.map((s) => s.values.length))

/** Where a panel's value and window fall, in the panel's coordinates. */
export const scales = (panel: Panel) => {
  const top = yTop(panel)
  const slot = plotWidth / windowsOf(panel)
  return {
    top,
    slot,
    y: (value: number) => layout.top + plotHeight - (value / top) * plotHeight,
    x: (window: number) => layout.left + slot * window
  }
}

const text = (x: number, y: number, content: string, attributes = ""): string =>
  `<text x="${n(x)}" y="${n(y)}" ${attributes}>${escapeXml(content)}</text>`

/** The y axis: grid lines, tick labels, the axis label turned up the side. */
const yAxis = (panel: Panel): Array<string> => {
  const { top, y } = scales(panel)
  const step = niceStep(top)
  const ticks = Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step)
  const label = layout.top + plotHeight / 2
  return [
    ...ticks.map((tick) =>
      `<line x1="${layout.left}" x2="${layout.left + plotWidth}" y1="${n(y(tick))}" y2="${
        n(y(tick))
      }" stroke="#e5e7eb"/>` +
      text(
        layout.left - 6,
        y(tick) + 4,
        tick.toLocaleString("en-US"),
        `text-anchor="end" font-size="11" fill="${faint}"`
      )
    ),
    text(16, label, panel.yLabel, `text-anchor="middle" font-size="12" transform="rotate(-90 16 ${n(label)})"`)
  ]
}

/** The x axis: the baseline, a label per window (every few when there are many), the axis label. */
const xAxis = (panel: Panel): Array<string> => {
  const { slot, x } = scales(panel)
  const count = windowsOf(panel)
  const every = Math.ceil(count / 16)
  const base = layout.top + plotHeight
  return [
    `<line x1="${layout.left}" x2="${layout.left + plotWidth}" y1="${base}" y2="${base}" stroke="${ink}"/>`,
    ...Array.from({ length: count }, (_, i) => i)
      .filter((i) => (i + 1) % every === 0 || i === 0)
      .map((i) =>
        text(x(i) + slot / 2, base + 15, String(i + 1), `text-anchor="middle" font-size="11" fill="${faint}"`)
      ),
    text(layout.left + plotWidth / 2, base + 32, panel.xLabel, "text-anchor=\"middle\" font-size=\"12\"")
  ]
}

/** The bars, stacked per window in the order of the series; one `<rect>` per value. */
const barMarks = (panel: Panel): Array<string> => {
  const { slot, x, y } = scales(panel)
  const width = slot * 0.72
  const base = Array.from({ length: windowsOf(panel) }, () => 0)
  return bars(panel).flatMap((series) =>
    series.values.map((value, i) => {
      const from = base[i]!
      const to = from + (value ?? 0)
      base[i] = to
      return `<rect class="bar" x="${n(x(i) + (slot - width) / 2)}" y="${n(y(to))}" width="${n(width)}" height="${
        n(y(from) - y(to))
      }" fill="${series.color}"><title>${
        escapeXml(`window ${i + 1}: ${value ?? "none"} ${series.name}`)
      }</title></rect>`
    })
  )
}

/** A line through the windows' middles, broken where a value is missing; one `<circle>` per value. */
const lineMarks = (panel: Panel): Array<string> => {
  const { slot, x, y } = scales(panel)
  return lines(panel).flatMap((series) => {
    const points = series.values.map((v, i) => v === null ? null : [x(i) + slot / 2, y(v)] as const)
    const path = points.map((p, i) =>
      p === null ? "" : `${i === 0 || points[i - 1] === null ? "M" : "L"}${n(p[0])} ${n(p[1])}`
    ).join("")
    return [
      ...(path === "" ? [] : [`<path d="${path}" fill="none" stroke="${series.color}" stroke-width="2.5"/>`]),
      ...points.flatMap((p, i) =>
        p === null ? [] : [
          `<circle class="point" cx="${n(p[0])}" cy="${n(p[1])}" r="3.5" fill="${series.color}"><title>${
            escapeXml(`window ${i + 1}: ${series.values[i]} ${series.name}`)
          }</title></circle>`
        ]
      )
    ]
  })
}

/** The quota: a dashed line across the plot (under the lines, which may run along it). */
const quotaLine = (panel: Panel): Array<string> => {
  if (panel.quota === undefined) return []
  const at = scales(panel).y(panel.quota.value)
  return [
    `<line class="quota" x1="${layout.left}" x2="${layout.left + plotWidth}" y1="${n(at)}" y2="${
      n(at)
    }" stroke="${ink}" stroke-width="2" stroke-dasharray="7 4"/>`
  ]
}

/** The quota's label at the right end of its line, over everything. */
const quotaLabel = (panel: Panel): Array<string> => {
  if (panel.quota === undefined) return []
  const at = scales(panel).y(panel.quota.value)
  return [
    text(
      layout.left + plotWidth - 4,
      at - 5,
      panel.quota.label,
      "text-anchor=\"end\" font-size=\"11\" font-weight=\"600\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\""
    )
  ]
}

/** The legend's entries: a swatch and a name per series, then the quota's dash. */
const legendItems = (panel: Panel) => [
  ...panel.series.map((s) => ({ name: s.name, swatch: swatch(s) })),
  ...(panel.quota === undefined ? [] : [{
    name: panel.quota.label,
    swatch: `<line x1="0" x2="14" y1="0" y2="0" stroke="${ink}" stroke-width="2" stroke-dasharray="5 3"/>`
  }])
]

/** Where each legend entry goes: in rows under the x axis, wrapped at the panel's width (about 6.2 px a letter). */
const legendPlaces = (panel: Panel): Array<{ readonly x: number; readonly row: number }> => {
  let x = layout.left
  let row = 0
  return legendItems(panel).map((item) => {
    const width = 22 + item.name.length * 6.2 + 14
    if (x + width > layout.width - layout.right && x > layout.left) {
      x = layout.left
      row++
    }
    const place = { x, row }
    x += width
    return place
  })
}

/** The legend's rows beyond the two a panel has room for. */
const extraRows = (panel: Panel): number => Math.max(0, ...legendPlaces(panel).map((p) => p.row - 1))

const legend = (panel: Panel): Array<string> => {
  const places = legendPlaces(panel)
  return legendItems(panel).map((item, i) => {
    const { row, x } = places[i]!
    const y = layout.top + plotHeight + 52 + row * 16
    return `<g transform="translate(${n(x)} ${n(y)})">${item.swatch}${text(20, 4, item.name, "font-size=\"11\"")}</g>`
  })
}

const swatch = (series: Series): string =>
  series.kind === "bar"
    ? `<rect x="0" y="-6" width="14" height="12" fill="${series.color}"/>`
    : `<line x1="0" x2="14" y1="0" y2="0" stroke="${series.color}" stroke-width="2.5"/>` +
      `<circle cx="7" cy="0" r="3" fill="${series.color}"/>`

/** The height of a figure's panels: room for the longest legend of them. */
const panelHeight = (panels: ReadonlyArray<Panel>): number => layout.height + 16 * Math.max(0, ...panels.map(extraRows))

/** One panel, drawn at its place in the grid. */
const panelAt = (panel: Panel, index: number, columns: number, height: number): string => {
  const dx = (index % columns) * layout.width
  const dy = layout.header + Math.floor(index / columns) * height
  return [
    `<g class="panel" transform="translate(${dx} ${dy})">`,
    text(layout.left, 22, panel.title, "font-size=\"13\" font-weight=\"600\""),
    ...yAxis(panel),
    ...barMarks(panel),
    ...quotaLine(panel),
    ...lineMarks(panel),
    ...quotaLabel(panel),
    ...xAxis(panel),
    ...legend(panel),
    "</g>"
  ].join("\n")
}

/** The title's font size: 16, smaller where a long title would not fit the figure's width (about 0.6 em a letter). */
export const titleSize = (title: string, width: number): number =>
  Math.min(16, Math.floor((width - 2 * layout.left) / (title.length * 0.6)))

/** The figure as an SVG document. */
export const render = (figure: Figure): string => {
  const columns = Math.max(1, Math.min(figure.columns, figure.panels.length))
  const width = columns * layout.width
  const rowHeight = panelHeight(figure.panels)
  const height = layout.header + Math.ceil(figure.panels.length / columns) * rowHeight
  const id = figure.id.replace(/[^A-Za-z0-9_-]/g, "-")
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ` +
    `role="img" aria-labelledby="${id}-title ${id}-desc" ${font} fill="${ink}">`,
    `<title id="${id}-title">${escapeXml(figure.title)}</title>`,
    `<desc id="${id}-desc">${escapeXml(figure.description)}</desc>`,
    `<rect class="background" x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
    text(layout.left, 28, figure.title, `font-size="${titleSize(figure.title, width)}" font-weight="700"`),
    ...figure.panels.map((panel, i) => panelAt(panel, i, columns, rowHeight)),
    "</svg>",
    ""
  ].join("\n")
}
