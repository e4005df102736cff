/**
 * The benchmarks' SVG renderer (bench/chart.ts): well-formed XML, accessible, one mark per value, bars stacked,
 * the quota line where its value falls, gaps in lines. The SVG is read back by a small XML parser written here
 * (no dependency), which throws on anything not well-formed.
 */
import { describe, expect, it } from "vitest"
import { type Figure, layout, type Panel, render } from "../../bench/chart.js"

interface Node {
  readonly name: string
  readonly attributes: Readonly<Record<string, string>>
  readonly children: ReadonlyArray<Node>
  readonly text: string
}

const entities: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }

const isNameChar = (c: string | undefined): boolean =>
  c !== undefined && (c >= "a" && c <= "z" || c >= "A" && c <= "Z" || c >= "0" && c <= "9" || "_:.-".includes(c))
const isSpace = (c: string | undefined): boolean => c === " " || c === "\n" || c === "\t" || c === "\r"

/** Parses a document of elements, attributes, text and entities; throws where it is not well-formed XML. */
const parseXml = (source: string): Node => {
  let i = 0
  const fail = (why: string): never => {
    throw new Error(`not well-formed: ${why} at ${i}: ${JSON.stringify(source.slice(i, i + 40))}`)
  }
  const skipSpace = () => {
    while (isSpace(source[i])) i++
  }
  const expect = (literal: string) => {
    if (!source.startsWith(literal, i)) fail(`expected ${literal}`)
    i += literal.length
  }
  const name = (): string => {
    const from = i
    while (isNameChar(source[i])) i++
    return i > from ? source.slice(from, i) : fail("expected a name")
  }
  /** Characters up to `stop`, entities decoded; a bare `&` or `<` is an error. */
  const characters = (stop: string): string => {
    let out = ""
    while (i < source.length && source[i] !== stop) {
      if (source[i] === "<") fail("< in text")
      if (source[i] === "&") {
        const end = source.indexOf(";", i)
        const entity = end < 0 ? fail("unterminated entity") : source.slice(i + 1, end)
        out += entity.startsWith("#")
          ? String.fromCodePoint(Number(entity.slice(1)))
          : entities[entity] ?? fail("entity")
        i = end + 1
      } else out += source[i++]
    }
    return out
  }
  const element = (): Node => {
    expect("<")
    const tag = name()
    const attributes: Record<string, string> = {}
    for (skipSpace(); source[i] !== ">" && source[i] !== "/"; skipSpace()) {
      const key = name()
      if (key in attributes) fail(`duplicate attribute ${key}`)
      skipSpace()
      expect("=")
      skipSpace()
      const quote = source[i] === "\"" || source[i] === "'" ? source[i++]! : fail("unquoted attribute")
      attributes[key] = characters(quote)
      expect(quote)
      if (!isSpace(source[i]) && source[i] !== ">" && source[i] !== "/") fail("no space between attributes")
    }
    if (source.startsWith("/>", i)) return (i += 2, { name: tag, attributes, children: [], text: "" })
    expect(">")
    const children: Array<Node> = []
    let text = ""
    while (!source.startsWith("</", i)) {
      if (i >= source.length) fail(`unclosed <${tag}>`)
      if (source[i] === "<") children.push(element())
      else text += characters("<")
    }
    expect("</")
    expect(tag)
    skipSpace()
    expect(">")
    return { name: tag, attributes, children, text }
  }
  skipSpace()
  const root = element()
  skipSpace()
  if (i < source.length) fail("content after the root element")
  return root
}

const all = (node: Node, predicate: (n: Node) => boolean): Array<Node> => [
  ...(predicate(node) ? [node] : []),
  ...node.children.flatMap((child) => all(child, predicate))
]
const byClass = (root: Node, name: string, className: string) =>
  all(root, (n) => n.name === name && n.attributes["class"] === className)
const number = (node: Node, attribute: string): number => Number(node.attributes[attribute])

const plotHeight = layout.height - layout.top - layout.bottom

const panel = (overrides: Partial<Panel> = {}): Panel => ({
  title: "requests",
  yLabel: "requests per window",
  xLabel: "window",
  quota: { value: 20, label: "quota: 20 requests" },
  series: [
    { name: "admitted", color: "#0072B2", kind: "bar", values: [20, 13, 16, 2] },
    { name: "answered 429", color: "#D55E00", kind: "bar", values: [4, 8, 0, 0] }
  ],
  ...overrides
})

const figure = (panels: ReadonlyArray<Panel>, overrides: Partial<Figure> = {}): Figure => ({
  id: "test",
  title: "A figure",
  description: "What it shows.",
  columns: 2,
  panels,
  ...overrides
})

describe("bench/chart.ts", () => {
  it("draws a well-formed SVG document whose title and description name it, on a white background", () => {
    const root = parseXml(render(figure([panel(), panel()], { title: "Tokens < quota & \"more\"" })))
    expect(root.name).toBe("svg")
    expect(root.attributes["xmlns"]).toBe("http://www.w3.org/2000/svg")
    expect(root.attributes["role"]).toBe("img")
    const [title, desc, background] = root.children
    expect([title?.name, title?.text]).toEqual(["title", "Tokens < quota & \"more\""])
    expect([desc?.name, desc?.text]).toEqual(["desc", "What it shows."])
    expect(root.attributes["aria-labelledby"]).toBe(`${title?.attributes["id"]} ${desc?.attributes["id"]}`)
    expect(background?.attributes).toMatchObject({
      x: "0",
      y: "0",
      width: root.attributes["width"],
      height: root.attributes["height"],
      fill: "#ffffff"
    })
  })

  it("shrinks a title too long for the figure's width", () => {
    const title = (text: string) =>
      parseXml(render(figure([panel()], { title: text }))).children.find((n) => n.name === "text")!
    expect(number(title("Short"), "font-size")).toBe(16)
    const long = "a window ".repeat(20).trim()
    const size = number(title(long), "font-size")
    expect(size).toBeLessThan(16)
    expect(long.length * 0.6 * size).toBeLessThanOrEqual(layout.width - 2 * layout.left)
  })

  it("lays panels out in a grid of the figure's columns", () => {
    const root = parseXml(render(figure([panel(), panel(), panel()])))
    expect(number(root, "width")).toBe(2 * layout.width)
    expect(number(root, "height")).toBe(layout.header + 2 * layout.height)
    expect(root.attributes["viewBox"]).toBe(`0 0 ${2 * layout.width} ${layout.header + 2 * layout.height}`)
    expect(byClass(root, "g", "panel")).toHaveLength(3)
  })

  it("draws one bar per value of each bar series, and one point per value of a line", () => {
    const line = { name: "learnt limit", color: "#6A3D9A", kind: "line" as const, values: [18, 19, 20, 20] }
    const root = parseXml(render(figure([panel({ series: [...panel().series, line] })])))
    expect(byClass(root, "rect", "bar")).toHaveLength(8)
    expect(byClass(root, "circle", "point")).toHaveLength(4)
  })

  it("stacks bars: a window's second bar starts where its first ends", () => {
    const bars = byClass(parseXml(render(figure([panel()]))), "rect", "bar")
    const [first, second] = [bars[0]!, bars[4]!]
    expect(number(second, "y") + number(second, "height")).toBeCloseTo(number(first, "y"), 1)
    expect(number(first, "x")).toBe(number(second, "x"))
  })

  it("puts the quota line at its value on the y axis, which is rounded up to a tick above the data", () => {
    // the highest stack is 24 (20 + 4): ticks of 5, the axis to 25
    const root = parseXml(render(figure([panel()])))
    const [quota] = byClass(root, "line", "quota")
    const expected = layout.top + plotHeight * (1 - 20 / 25)
    expect(number(quota!, "y1")).toBeCloseTo(expected, 1)
    expect(number(quota!, "y2")).toBeCloseTo(expected, 1)
    const ticks = all(root, (n) => n.name === "text" && n.attributes["text-anchor"] === "end").map((n) => n.text)
    expect(ticks).toContain("25")
    expect(ticks).not.toContain("30")
    // the first bar of 20 reaches the quota line exactly
    const [bar] = byClass(root, "rect", "bar")
    expect(number(bar!, "y")).toBeCloseTo(expected, 1)
  })

  it("shares a scale across panels through yMax, and keeps room above a quota higher than the data", () => {
    const shared = parseXml(render(figure([panel({ yMax: 60 })])))
    // the panel's own data reach 24; the figure's other panel 60, on ticks of 20
    expect(number(byClass(shared, "line", "quota")[0]!, "y1")).toBeCloseTo(layout.top + plotHeight * (1 - 20 / 60), 1)
    const low = parseXml(render(figure([panel({ quota: { value: 100, label: "quota" }, yMax: 60 })])))
    const [quota] = byClass(low, "line", "quota")
    // 110 (the quota with room above it) rounds up to 150 on ticks of 50
    expect(number(quota!, "y1")).toBeCloseTo(layout.top + plotHeight * (1 - 100 / 150), 1)
  })

  it("breaks a line where a value is missing and draws no point there", () => {
    const line = { name: "learnt", color: "#000000", kind: "line" as const, values: [null, 10, 12, null, 15] }
    const root = parseXml(render(figure([panel({ series: [line] })])))
    expect(byClass(root, "circle", "point")).toHaveLength(3)
    const [path] = all(root, (n) => n.name === "path")
    const d = path!.attributes["d"]!
    expect([...d].filter((c) => c === "M")).toHaveLength(2)
    expect([...d].filter((c) => c === "L")).toHaveLength(1)
  })

  it("makes the panels taller for a legend of more than two rows", () => {
    const many = Array.from({ length: 8 }, (_, i) => ({
      name: `a series with a long name ${i}`,
      color: "#000000",
      kind: "bar" as const,
      values: [1]
    }))
    const root = parseXml(render(figure([panel({ series: many }), panel()])))
    const legendRows = new Set(
      all(root, (n) => n.name === "g" && (n.attributes["transform"] ?? "").startsWith("translate(")).map((n) =>
        n.attributes["transform"]!.split(" ")[1]
      )
    )
    expect(legendRows.size).toBeGreaterThan(3)
    expect(number(root, "height")).toBe(layout.header + layout.height + 16 * (legendRows.size - 3))
  })

  it("names every series and the quota in the legend", () => {
    const root = parseXml(render(figure([panel()])))
    const texts = all(root, (n) => n.name === "text").map((n) => n.text)
    expect(texts).toEqual(expect.arrayContaining(["admitted", "answered 429", "quota: 20 requests"]))
  })

  it("the parser here refuses what is not well-formed", () => {
    for (const bad of ["<svg>", "<a><b></a></b>", "<a x=1/>", "<a>&nope;</a>", "<a x=\"1\" x=\"2\"/>", "<a/><b/>"]) {
      expect(() => parseXml(bad)).toThrow(/not well-formed/)
    }
  })
})
