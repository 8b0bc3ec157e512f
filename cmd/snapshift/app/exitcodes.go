package app

import (
	"fmt"
	"strings"
)

// exitCode documents one exit code: Help in --help's EXIT CODES (plain
// text), Doc in README.md's table (Markdown). README's table is rendered
// from this one (TestExitCodesDocumented; make docs rewrites it), and every
// row of TestBadInputTable expects one of these codes for its kind of
// mistake.
type exitCode struct {
	Code      int
	Help, Doc string
}

// exitCodes is the one table of exit codes, one per kind of outcome.
var exitCodes = []exitCode{
	{ExitOK, "success", "success"},
	{ExitError, "unexpected failure (an I/O error during the run, a bug)",
		"an unexpected failure: an I/O error during the run (disk full, EIO) or a bug"},
	{ExitUsage, "bad command line or configuration file (a flag, a rebuild or rules file key or value, a contradiction, " +
		"a path that does not fit, a name the input does not have, a value this snapshot cannot take)",
		"a bad command line or configuration file: an unknown flag, command, subcommand, help topic or key, a value of the wrong " +
			"type or outside its list (`--renew apisever`), a malformed, empty or unusable value (a loopback, link-local or multicast " +
			"range, a `kubernetesVersion` older than the oldest supported), a contradiction (a flag that takes one value given two, " +
			"two addresses for one node, `--wal-dir` the `--data-dir`, `--initial-advertise-peer-urls` other than what " +
			"`--initial-cluster` lists), an option that needs another, a file or directory a flag names that does not exist or does " +
			"not fit (`--config`, `--rules`, `--encryption-config`, `--manifest-dir`, an output or `--tmp-dir` directory that does not " +
			"exist or cannot be written, a `--bundle` without `report.json`, `clean` of a file), a name the input does not have " +
			"(`get`'s key, `--node`, `--keep-service-ip`, `--dns-service`, `--control-plane-address`'s node), or an option this " +
			"snapshot cannot take (a new range over the unmoved one, of the other family, an `--etcd-prefix` it does not keep its objects under)"},
	{ExitBadInput, "the input (a snapshot, verify --data-dir's member) does not exist or is not usable (corrupt, truncated, " +
		"wrong hash, no trailer, not bbolt, no member/)",
		"the input (the snapshot argument, a rebuild file's `snapshot`, `verify --data-dir`'s member) does not exist or is not a " +
			"usable etcd snapshot or data dir: corrupt, truncated, wrong hash, no trailer without `--skip-hash-check`, not bbolt, " +
			"a directory without `member/`"},
	{ExitRefused, "refused: an existing output without --force, a non-empty data dir, a change that is unsafe, or this " +
		"host's state (node apply's preflight, node rollback without a backup)",
		"refused: an existing output without `--force`, a non-empty data dir, a change that is unsafe (a range too small, an " +
			"IPAM no rule moves, an encrypted value without its key), or this host's state (`node apply`'s failed preflight, " +
			"`node rollback` with no backup)"},
	{ExitVerify, "verification failed (verify, cluster check, or transform's check of its own output: nothing was published)",
		"verification failed (`verify`, `cluster check`, or `transform`'s check of its own output: nothing was published)"},
	{ExitInterrupted, "interrupted (SIGINT/SIGTERM); temporary files were removed",
		"interrupted (SIGINT/SIGTERM); temporary files were removed"},
}

// exitCodeHelp is --help's EXIT CODES section.
func exitCodeHelp() string {
	var b strings.Builder
	b.WriteString("EXIT CODES:\n")
	for _, e := range exitCodes {
		for i, line := range wrapWords(e.Help, 104) {
			if i == 0 {
				fmt.Fprintf(&b, "   %-4d %s\n", e.Code, line)
			} else {
				fmt.Fprintf(&b, "        %s\n", line)
			}
		}
	}
	return b.String()
}

// exitCodeTable is README.md's table of exit codes.
func exitCodeTable() string {
	var b strings.Builder
	b.WriteString("| exit code | meaning |\n|---|---|\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, e.Doc)
	}
	return b.String()
}

// wrapWords breaks s into lines of at most width bytes, at spaces.
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
