package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// systemColor gives every system the same color in every panel.
var systemColor = map[string]string{
	"ticketd":        "#1f77b4",
	"ticketd-any":    "#6baed6",
	"ticketd-follow": "#9ecae1",
	"echo":           "#7f7f7f",
	"etcd":           "#d62728",
	"redis":          "#ff7f0e",
	"postgres":       "#2ca02c",
	"mariadb":        "#9467bd",
}

func colorOf(sys string) string {
	if c, ok := systemColor[sys]; ok {
		return c
	}
	return "#17becf"
}

// chartPanel is one grouped bar chart: a group of bars per concurrency
// level, a bar per system, on a log10 axis.
type chartPanel struct {
	title string
	unit  string
	value func(*levelResult) float64
	count uint64
}

// renderChart draws the side-by-side results as SVG: for every range size,
// one panel of reservations/s and one of p99 latency, both log scale (the
// systems differ by orders of magnitude). Plain SVG written by hand, so the
// benchmark needs no plotting tool.
func renderChart(r *fullReport) string {
	g := r.mainGroup()
	counts, concs, systems := r.axes(g)
	var panels []chartPanel
	for _, c := range counts {
		panels = append(panels,
			chartPanel{title: fmt.Sprintf("reservations/s, range size %d (higher is better)", c), unit: "/s", count: c,
				value: func(l *levelResult) float64 { return l.ReservationsPerSec }},
			chartPanel{title: fmt.Sprintf("p99 latency, range size %d (lower is better)", c), unit: "ms", count: c,
				value: func(l *levelResult) float64 { return l.P99Ms }},
		)
	}
	const (
		panelW, panelH = 560, 300
		marginL        = 70
		marginT        = 40
		marginB        = 40
		legendH        = 30
	)
	cols := 2
	rows := (len(panels) + cols - 1) / cols
	width := cols * panelW
	// Legend entries wrap onto as many lines as they need.
	legendLines, lx := 1, 10
	for _, sys := range systems {
		w := 24 + 6*len(title(sys))
		if lx+w > width && lx > 10 {
			legendLines++
			lx = 10
		}
		lx += w
	}
	height := rows*panelH + legendH*legendLines + 30

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	when := ""
	if len(r.Loads) > 0 {
		when = r.Loads[0].StartedAt.Format("2006-01-02")
	}
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14" font-weight="bold">ticketd vs the alternatives on one machine (%s, %d CPUs) — closed loop, log scale</text>`+"\n", html.EscapeString(when), numCPU(r))

	for i, p := range panels {
		ox := (i % cols) * panelW
		oy := 30 + (i/cols)*panelH
		drawPanel(&b, r, g, p, concs, systems, ox, oy, panelW, panelH, marginL, marginT, marginB)
	}
	// Legend.
	ly := 30 + rows*panelH + 10
	x := 10
	for _, sys := range systems {
		t := title(sys)
		if w := 24 + 6*len(t); x+w > width && x > 10 {
			x, ly = 10, ly+legendH
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, x, ly, colorOf(sys))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+16, ly+10, html.EscapeString(t))
		x += 24 + 6*len(t)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func numCPU(r *fullReport) int {
	if len(r.Loads) > 0 {
		return r.Loads[0].NumCPU
	}
	return 0
}

func drawPanel(b *strings.Builder, r *fullReport, g string, p chartPanel, concs []int, systems []string, ox, oy, w, h, ml, mt, mb int) {
	plotW := w - ml - 20
	plotH := h - mt - mb
	// Value range over the panel, rounded out to decades.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range concs {
		for _, s := range systems {
			if l, ok := r.find(g, s, 0, p.count, c); ok {
				if v := p.value(l); v > 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" font-weight="bold">%s</text>`+"\n", ox+ml, oy+mt-18, html.EscapeString(p.title))
	if math.IsInf(lo, 1) {
		return
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	y := func(v float64) float64 {
		return float64(oy+mt) + float64(plotH)*(1-(math.Log10(v)-dlo)/(dhi-dlo))
	}
	// Axis and decade grid lines.
	for d := dlo; d <= dhi; d++ {
		v := math.Pow(10, d)
		yy := y(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, ox+ml, yy, ox+ml+plotW, yy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s %s</text>`+"\n", ox+ml-4, yy+4, axisNum(v), p.unit)
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", ox+ml, oy+mt, ox+ml, oy+mt+plotH)
	groupW := float64(plotW) / float64(len(concs))
	barW := groupW * 0.8 / float64(len(systems))
	for ci, c := range concs {
		gx := float64(ox+ml) + groupW*float64(ci) + groupW*0.1
		for si, s := range systems {
			l, ok := r.find(g, s, 0, p.count, c)
			if !ok {
				continue
			}
			v := p.value(l)
			if v <= 0 {
				continue
			}
			top := y(v)
			bx := gx + barW*float64(si)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s c=%d: %s %s</title></rect>`+"\n",
				bx, top, barW-1, float64(oy+mt+plotH)-top, colorOf(s), html.EscapeString(title(s)), c, axisNum(v), p.unit)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">concurrency %d</text>`+"\n", gx+groupW*0.4, oy+mt+plotH+16, c)
	}
}

func axisNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
