// Command window measures the downtime window of each lab scenario (issue
// 48) from what the lab recorded while it ran:
//
//	window -dir PROBES -out DIR
//
// PROBES holds phases.jsonl (the lab's phases: each scenario's migration
// and rollback, the snapshot, the rebuild, each runbook block or playbook
// task, the checks; one {"t","phase","event"} line per start and end) and
// one <node>-<pod>.jsonl per prober (probe watch: every 0.5 s, /readyz from
// the operator's machine; DNS, a Service's VIP, the NodePort and the other
// pods by IP from a pod on each node). For every migration and rollback it
// writes, into DIR, every outage of every probe (start, end, length: the
// failing samples in a row, a probe that did not run for over 2 s counted
// apart as unobserved), the window (the first /readyz failure to the end of
// the checks that follow), window.json, window.md (the table), and one
// timeline per scenario as SVG and PNG (window-<scenario>-<migrate|rollback>.svg),
// drawn with gonum/plot: the phases as bars, each probe's row green where
// it answered and red where it did not.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type sample struct {
	T      int64  `json:"t"`
	Node   string `json:"node"`
	Pod    string `json:"pod"`
	Probe  string `json:"probe"`
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Err    string `json:"err"`
}

type mark struct {
	T     int64  `json:"t"`
	Phase string `json:"phase"`
	Event string `json:"event"`
}

// Span is a stretch of time, in seconds since the scenario began.
type Span struct {
	Start   float64 `json:"start"`
	End     float64 `json:"end"`
	Seconds float64 `json:"seconds"`
	Why     string  `json:"why,omitempty"`
}

// Phase is one of the lab's phases inside a scenario.
type Phase struct {
	Name string `json:"name"`
	Span
}

// Probe is one probe from one place (a node's pods, or the operator).
type Probe struct {
	Name       string  `json:"name"` // "w1 dns", "operator readyz"
	Samples    int     `json:"samples"`
	Failed     int     `json:"failed"`
	Outages    []Span  `json:"outages"`
	Down       float64 `json:"downSeconds"`
	Unobserved float64 `json:"unobservedSeconds"`
}

// Scenario is one migration or rollback.
type Scenario struct {
	Name    string  `json:"name"` // "old-ca-runbook migrate"
	Seconds float64 `json:"seconds"`
	// Window is the first /readyz failure to the end of the checks.
	Window *Span    `json:"window,omitempty"`
	Phases []Phase  `json:"phases"`
	Probes []Probe  `json:"probes"`
	start  int64    // Unix ms
	end    int64    // Unix ms
	marks  []mark   // inside it
	series []series // inside it
}

type series struct {
	name    string
	samples []sample
}

func main() {
	dir := flag.String("dir", "", "the probes directory (phases.jsonl and the probers' files)")
	out := flag.String("out", "", "where window.json, window.md and the SVGs go")
	flag.Parse()
	if *dir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: window -dir PROBES -out DIR")
		os.Exit(2)
	}
	if err := run(*dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "window:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	var marks []mark
	if err := readLines(filepath.Join(dir, "phases.jsonl"), func(b []byte) error {
		var m mark
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		marks = append(marks, m)
		return nil
	}); err != nil {
		return err
	}
	all := map[string][]sample{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, f := range files {
		if filepath.Base(f) == "phases.jsonl" {
			continue
		}
		if err := readLines(f, func(b []byte) error {
			var s sample
			if json.Unmarshal(b, &s) != nil {
				return nil // a line cut by a killed prober
			}
			all[s.Node+" "+s.Probe] = append(all[s.Node+" "+s.Probe], s)
			return nil
		}); err != nil {
			return err
		}
	}
	for k, ss := range all {
		all[k] = perTick(ss)
	}
	scenarios := cut(marks, all)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for i := range scenarios {
		measure(&scenarios[i])
		if err := timeline(&scenarios[i], filepath.Join(out, "window-"+strings.ReplaceAll(scenarios[i].Name, " ", "-")+".svg")); err != nil {
			return err
		}
	}
	j, err := json.MarshalIndent(map[string]any{"apiVersion": "snapshift.io/v1alpha1", "kind": "LabWindow", "scenarios": scenarios}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "window.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	md := table(scenarios)
	fmt.Print(md)
	return os.WriteFile(filepath.Join(out, "window.md"), []byte(md), 0o644)
}

func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// perTick makes one sample of each tick's samples of a probe (one per
// target): the NodePort answers when it answers on every other node; a pod
// reaches its peers when it reaches one of them (its list of peers lags
// behind pods recreated elsewhere by up to 5 s, and a gone peer's address is
// no outage).
func perTick(ss []sample) []sample {
	byT := map[int64]int{}
	var out []sample
	for _, s := range ss {
		i, ok := byT[s.T]
		if !ok {
			byT[s.T] = len(out)
			out = append(out, s)
			continue
		}
		if s.Probe == "pod" {
			if s.OK {
				out[i].OK, out[i].Err = true, ""
			}
		} else if !s.OK && out[i].OK {
			out[i].OK, out[i].Err = false, s.Err
		}
	}
	return out
}

// cut splits the marks and samples by the scenarios' "scenario:NAME:KIND"
// phases.
func cut(marks []mark, all map[string][]sample) []Scenario {
	var out []Scenario
	open := map[string]int{}
	for _, m := range marks {
		name, ok := strings.CutPrefix(m.Phase, "scenario:")
		if !ok {
			continue
		}
		name = strings.Replace(name, ":", " ", 1)
		switch m.Event {
		case "start":
			open[name] = len(out)
			out = append(out, Scenario{Name: name, start: m.T})
		case "end":
			if i, ok := open[name]; ok {
				out[i].end = m.T
			}
		}
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for i := range out {
		s := &out[i]
		if s.end == 0 {
			s.end = math.MaxInt64
		}
		for _, m := range marks {
			if m.T >= s.start && m.T <= s.end && !strings.HasPrefix(m.Phase, "scenario:") {
				s.marks = append(s.marks, m)
			}
		}
		for _, k := range names {
			var in []sample
			for _, x := range all[k] {
				if x.T >= s.start && x.T <= s.end {
					in = append(in, x)
				}
			}
			if len(in) > 0 {
				sort.Slice(in, func(a, b int) bool { return in[a].T < in[b].T })
				s.series = append(s.series, series{name: k, samples: in})
			}
		}
		if s.end == math.MaxInt64 && len(s.marks) > 0 {
			s.end = s.marks[len(s.marks)-1].T
		}
	}
	return out
}

func (s *Scenario) at(t int64) float64 { return float64(t-s.start) / 1000 }

// measure fills the phases, the probes' outages and the window.
func measure(s *Scenario) {
	s.Seconds = s.at(s.end)
	started := map[string]int64{}
	for _, m := range s.marks {
		switch m.Event {
		case "start":
			started[m.Phase] = m.T
		case "end":
			if t, ok := started[m.Phase]; ok {
				s.Phases = append(s.Phases, Phase{Name: m.Phase, Span: span(s.at(t), s.at(m.T))})
				delete(started, m.Phase)
			}
		}
	}
	sort.SliceStable(s.Phases, func(a, b int) bool { return s.Phases[a].Start < s.Phases[b].Start })
	firstDown := int64(-1)
	for _, sr := range s.series {
		p := Probe{Name: sr.name, Samples: len(sr.samples)}
		var downAt int64 = -1
		var why string
		last := s.start
		for i, x := range sr.samples {
			if gap := x.T - last; gap > 2000 && i > 0 {
				p.Unobserved += float64(gap) / 1000
			}
			last = x.T
			if !x.OK {
				p.Failed++
				if downAt < 0 {
					downAt, why = x.T, x.Err
				}
				if strings.HasSuffix(sr.name, " readyz") && (firstDown < 0 || x.T < firstDown) {
					firstDown = x.T
				}
				continue
			}
			if downAt >= 0 {
				o := span(s.at(downAt), s.at(x.T))
				o.Why = why
				p.Outages = append(p.Outages, o)
				p.Down += o.Seconds
				downAt = -1
			}
		}
		if downAt >= 0 {
			o := span(s.at(downAt), s.at(last))
			o.Why = why + " (still failing at the end)"
			p.Outages = append(p.Outages, o)
			p.Down += o.Seconds
		}
		p.Down, p.Unobserved = round(p.Down), round(p.Unobserved)
		s.Probes = append(s.Probes, p)
	}
	if firstDown >= 0 {
		end := s.end
		for _, ph := range s.Phases {
			if ph.Name == "checks" || ph.Name == "block:check.run" {
				end = s.start + int64(ph.End*1000)
			}
		}
		w := span(s.at(firstDown), s.at(end))
		s.Window = &w
	}
}

func span(a, b float64) Span { return Span{Start: round(a), End: round(b), Seconds: round(b - a)} }

func round(f float64) float64 { return math.Round(f*10) / 10 }

// table is window.md: per scenario the window, then each probe's downtime.
func table(ss []Scenario) string {
	var b strings.Builder
	b.WriteString("| scenario | window (first /readyz failure to checks passed) | probe | outages | down | unobserved |\n|---|---|---|---|---|---|\n")
	for _, s := range ss {
		w := "—"
		if s.Window != nil {
			w = fmt.Sprintf("%.0f s (%.1f min)", s.Window.Seconds, s.Window.Seconds/60)
		}
		for i, p := range s.Probes {
			name, win := "", ""
			if i == 0 {
				name, win = s.Name, w
			}
			var os []string
			for _, o := range p.Outages {
				os = append(os, fmt.Sprintf("%.0f–%.0f s", o.Start, o.End))
			}
			if len(os) > 4 {
				os = append(os[:4], fmt.Sprintf("+%d more", len(p.Outages)-4))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f s | %.1f s |\n", name, win, p.Name, strings.Join(os, ", "), p.Down, p.Unobserved)
		}
	}
	return b.String()
}

// bars is a gonum/plot Plotter of filled rectangles, one row each.
type bars struct {
	rects []rect
}

type rect struct {
	x0, x1, y float64
	c         color.Color
	h         float64 // the bar's height in rows (0.8: a full row)
}

func (bs *bars) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	for _, r := range bs.rects {
		x0, x1 := tx(r.x0), tx(r.x1)
		if x1-x0 < 0.6 {
			x1 = x0 + 0.6 // a sample wide enough to see
		}
		y0, y1 := ty(r.y-r.h/2), ty(r.y+r.h/2)
		c.FillPolygon(r.c, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
}

func (bs *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, r := range bs.rects {
		xmin, xmax = math.Min(xmin, r.x0), math.Max(xmax, r.x1)
		ymin, ymax = math.Min(ymin, r.y-0.5), math.Max(ymax, r.y+0.5)
	}
	return
}

var (
	phaseColor = color.RGBA{R: 70, G: 110, B: 180, A: 255}
	okColor    = color.RGBA{R: 140, G: 200, B: 140, A: 255}
	downColor  = color.RGBA{R: 215, G: 40, B: 40, A: 255}
	windowCol  = color.RGBA{R: 250, G: 200, B: 80, A: 255}
)

// timeline draws one scenario: the window, the phases, each probe.
func timeline(s *Scenario, path string) error {
	p := plot.New()
	p.Title.Text = "snapshift lab: " + s.Name
	p.X.Label.Text = "seconds since the scenario began"
	bs := &bars{}
	var ticks []plot.Tick
	row := 0.0
	addRow := func(label string) float64 {
		row--
		ticks = append(ticks, plot.Tick{Value: row, Label: label})
		return row
	}
	if s.Window != nil {
		y := addRow(fmt.Sprintf("window %.0f s", s.Window.Seconds))
		bs.rects = append(bs.rects, rect{s.Window.Start, s.Window.End, y, windowCol, 0.8})
	}
	for _, ph := range s.Phases {
		y := addRow(strings.TrimPrefix(ph.Name, "block:"))
		bs.rects = append(bs.rects, rect{ph.Start, math.Max(ph.End, ph.Start+0.3), y, phaseColor, 0.8})
	}
	for _, sr := range s.series {
		y := addRow(sr.name)
		for i, x := range sr.samples {
			end := s.at(x.T) + 0.5
			if i+1 < len(sr.samples) {
				end = math.Min(end, s.at(sr.samples[i+1].T))
			}
			c := okColor
			if !x.OK {
				c = downColor
			}
			bs.rects = append(bs.rects, rect{s.at(x.T), end, y, c, 0.6})
		}
	}
	if len(bs.rects) == 0 {
		return nil
	}
	p.Add(bs)
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = row-0.5, -0.5
	p.X.Min = 0
	h := vg.Length(1.2+0.22*float64(len(ticks))) * vg.Inch
	if err := p.Save(11*vg.Inch, h, path); err != nil {
		return err
	}
	return p.Save(11*vg.Inch, h, strings.TrimSuffix(path, ".svg")+".png")
}
