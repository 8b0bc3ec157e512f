package app

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/snapshift/snapshift/migrate"
)

func (o *common) profileFlag() cli.Flag {
	return &cli.BoolFlag{Name: "profile", Destination: &o.profile,
		Usage: "print where the time went, phase by phase (index, prepare, stream, write, check, fsync ...); --output json always has it, under timing"}
}

// printProfile prints the run's phases with --profile.
func (o *common) printProfile(out io.Writer, r *migrate.Report) {
	if !o.profile || r == nil || r.Timing == nil {
		return
	}
	t := r.Timing
	fmt.Fprintf(out, "\nTiming (%.2fs wall):\n", t.TotalSeconds)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	sum := 0.0
	for _, ph := range t.Phases {
		fmt.Fprintf(w, "  %s\t%8.3fs\t%5.1f%%\n", ph.Name, ph.Seconds, percent(ph.Seconds, t.TotalSeconds))
		sum += ph.Seconds
	}
	fmt.Fprintf(w, "  between phases\t%8.3fs\t%5.1f%%\n", max(0, t.TotalSeconds-sum), percent(max(0, t.TotalSeconds-sum), t.TotalSeconds))
	w.Flush()
}

func percent(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
