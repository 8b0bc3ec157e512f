package fsutil

import "fmt"

// FormatSize is n bytes for a person, in binary units with three
// significant digits: "512 B", "1.18 GiB", "23.4 MiB", "101 MiB". Every
// size snapshift prints (the CLI, the leftovers summary, the benchmark)
// goes through it.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v, exp := float64(n)/unit, 0
	for (v >= unit || v <= -unit) && exp < 5 {
		v /= unit
		exp++
	}
	prec := 0
	switch a := max(v, -v); {
	case a < 9.995:
		prec = 2
	case a < 99.95:
		prec = 1
	}
	return fmt.Sprintf("%.*f %ciB", prec, v, "KMGTPE"[exp])
}
