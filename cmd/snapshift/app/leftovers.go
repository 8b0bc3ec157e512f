package app

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/snapshift/snapshift/internal/fsutil"
)

// leftoverCleaner is a command that writes outputs. Before it validates
// its options, the temporaries killed runs left for those outputs are
// removed, in one line on stderr (they hold copies of the cluster, keys
// included); while another run is still writing them, it is refused.
type leftoverCleaner interface {
	// leftoverTargets are the command's output paths (their own
	// temporaries, beside them) and the directories it writes a set of
	// files into (every leftover in them).
	leftoverTargets() (outputs, dirs []string)
}

func cleanLeftovers(w io.Writer, cmd command) error {
	lc, ok := cmd.(leftoverCleaner)
	if !ok {
		return nil
	}
	outputs, dirs := lc.leftoverTargets()
	var all []fsutil.Leftover
	for _, p := range outputs {
		if p == "" {
			continue
		}
		ls, err := fsutil.FindLeftovers(filepath.Dir(filepath.Clean(p)), filepath.Base(filepath.Clean(p)))
		if err != nil {
			return err
		}
		all = append(all, ls...)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		ls, err := fsutil.FindLeftovers(d, "")
		if err != nil {
			return err
		}
		all = append(all, ls...)
	}
	for _, l := range all {
		if l.Live {
			return refusedf("another snapshift run (pid %d) is writing %s now (%s): wait for it, or stop it and run this again", l.PID, l.Target, l.Path)
		}
	}
	if err := fsutil.RemoveLeftovers(all); err != nil {
		return err
	}
	if line := fsutil.Summary(all); line != "" {
		fmt.Fprintf(w, "[clean] %s\n", line)
	}
	return nil
}

func (o *transformOptions) leftoverTargets() ([]string, []string) {
	if o.dryRun || o.plan {
		return nil, nil
	}
	return []string{o.out}, nil
}

func (o *restoreOptions) leftoverTargets() ([]string, []string) {
	dataDir := o.cfg.DataDir
	if dataDir == "" && o.cfg.Name != "" {
		dataDir = o.cfg.Name + ".etcd" // Validate's default
	}
	return []string{dataDir, o.cfg.WALDir}, nil
}

func (o *certsOptions) leftoverTargets() ([]string, []string) {
	dirs := []string{o.cfg.CertDir, o.kubeconfigDir}
	if o.cfg.CertDir != "" {
		dirs = append(dirs, filepath.Join(o.cfg.CertDir, "etcd"))
		if o.kubeconfigDir == "" {
			dirs = append(dirs, filepath.Dir(filepath.Clean(o.cfg.CertDir)))
		}
	}
	if o.kubeOut != "" {
		return []string{o.kubeOut}, dirs
	}
	return nil, dirs
}

func (o *manifestsOptions) leftoverTargets() ([]string, []string) {
	out := o.outDir
	if out == "" {
		out = o.manifestDir
	}
	return nil, []string{out, o.backupDir}
}
