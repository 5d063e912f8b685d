package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// table prints rows for people: a header, columns two spaces apart, numbers
// right-aligned and words left-aligned, no trailing blanks. text/tabwriter
// aligns every column of a table the same way, so it cannot put the two
// side by side; this is the little of it that the tables need.
type table struct {
	cols []column
	rows [][]string
}

type column struct {
	header string
	// right aligns the column's cells (and its header) to the right, as
	// numbers are read.
	right bool
}

func left(h string) column  { return column{header: h} }
func right(h string) column { return column{header: h, right: true} }

func newTable(cols ...column) *table { return &table{cols: cols} }

// row adds a row; it must have one cell per column.
func (t *table) row(cells ...string) {
	if len(cells) != len(t.cols) {
		panic(fmt.Sprintf("table row has %d cells for %d columns", len(cells), len(t.cols)))
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(w io.Writer) error {
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = utf8.RuneCountInString(c.header)
	}
	for _, r := range t.rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var l strings.Builder
		for i, cell := range cells {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if t.cols[i].right {
				l.WriteString(pad + cell)
			} else {
				l.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	headers := make([]string, len(t.cols))
	for i, c := range t.cols {
		headers[i] = c.header
	}
	line(headers)
	for _, r := range t.rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Cell formats. An ID or a count is printed in full (int64, never through a
// float): people copy them into commands.

func cellInt(v int64) string   { return strconv.FormatInt(v, 10) }
func cellUint(v uint64) string { return strconv.FormatUint(v, 10) }

func cellBool(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// cellBytes is a size in IEC units (1 KiB = 1024 bytes); -1 (unreadable) is "?".
func cellBytes(n int64) string {
	if n < 0 {
		return "?"
	}
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, exp := float64(n), 0
	for v >= unit && exp < 6 {
		v /= unit
		exp++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + string("KMGTPE"[exp-1]) + "iB"
}

// cellMs is a duration given in milliseconds, to the precision people read:
// "850ms", "12.3s", "4m10s".
func cellMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// cellPercentLeft is part of whole as a percentage with one decimal, rounded
// down, so that a sequence with any ID handed out never reads 100.0% left.
func cellPercentLeft(part, whole float64) string {
	if whole <= 0 {
		return "-"
	}
	return strconv.FormatFloat(math.Floor(part/whole*1000)/10, 'f', 1, 64) + "%"
}

// cellRate is a rate per second for people: "0/s", "0.4/s", "12/s",
// "1.2k/s", "350k/s", "4.1M/s" (SI prefixes, 1k = 1000). A rate above 0 that
// would round to 0 reads "<0.1/s", so that it never looks idle.
func cellRate(v float64) string {
	switch {
	case v <= 0:
		return "0/s"
	case v < 0.05:
		return "<0.1/s"
	}
	for _, prefix := range []string{"", "k", "M", "G", "T", "P"} {
		switch {
		case v < 9.95:
			return strconv.FormatFloat(v, 'f', 1, 64) + prefix + "/s"
		case v < 999.5:
			return strconv.FormatFloat(v, 'f', 0, 64) + prefix + "/s"
		}
		v /= 1000
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "E/s"
}

// cellTimeMs is a Unix-ms stamp as UTC time to the second; 0 is "-".
func cellTimeMs(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05Z")
}

// orDash is s, or "-" when s is empty, so that no cell reads as a gap.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
