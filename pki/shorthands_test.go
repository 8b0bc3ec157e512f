package pki

import "time"

// Helpers only the tests use: summaries of a Result.

// Backups lists the backup files made.
func (r Result) Backups() []string {
	var out []string
	for _, f := range r.Files {
		if f.Backup != "" {
			out = append(out, f.Backup)
		}
	}
	return out
}

// Expiry is the earliest NotAfter of the certificates written; zero when
// none was.
func (r Result) Expiry() time.Time {
	var first time.Time
	for _, f := range r.Files {
		if f.Cert != nil && (first.IsZero() || f.Cert.NotAfter.Before(first)) {
			first = f.Cert.NotAfter
		}
	}
	return first
}
