package app

import (
	"fmt"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"

	"github.com/snapshift/snapshift/inspect"
)

func getCommand() *cli.Command {
	return &cli.Command{
		Name:      "get",
		Usage:     "print one live key's decoded object (Secret data redacted)",
		ArgsUsage: "SNAPSHOT KEY",
		Description: "Decodes the stored value as kube-apiserver wrote it (protobuf or JSON) and prints it.\n" +
			"Secret data is replaced by its length unless --show-secrets is given.\n\n" +
			"Example:\n   snapshift get snapshot.db /registry/services/specs/kube-system/kube-dns -o json",
		Flags: []cli.Flag{
			flagSkipHash(), flagEncryption(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "yaml", Usage: "yaml or json"},
			&cli.BoolFlag{Name: "show-secrets", Usage: "print Secret data in full"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usagef("get needs SNAPSHOT and KEY (got %d arguments)", c.NArg())
			}
			format := c.String("output")
			if format != "yaml" && format != "json" {
				return usagef("--output must be yaml or json, not %q", format)
			}
			enc, err := loadEncryption(c)
			if err != nil {
				return err
			}
			r, err := inspect.Get(c.Context, inspect.GetConfig{Path: c.Args().Get(0), Key: c.Args().Get(1),
				SkipHashCheck: c.Bool("skip-hash-check"), ShowSecrets: c.Bool("show-secrets"), Encryption: enc})
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSON(c.App.Writer, r)
			}
			switch {
			case r.Object != nil:
				b, err := yaml.Marshal(r.Object)
				if err != nil {
					return err
				}
				_, err = c.App.Writer.Write(b)
				return err
			case r.Text != "":
				fmt.Fprintln(c.App.Writer, r.Text)
			default:
				fmt.Fprintf(c.App.Writer, "# %s (revision %d, %d bytes, %s)\n# %s\n", r.Entry.Key, r.Entry.ModRevision, r.Entry.Size, r.Entry.Encoding, r.Note)
			}
			return nil
		},
	}
}
