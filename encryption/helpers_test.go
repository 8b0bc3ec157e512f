package encryption

import "slices"

// Resources reports the resources the configuration's entries apply to, as written in the file
// ("secrets", "configmaps", "*.apps", "*.*", ...), in order and without duplicates. It includes
// entries whose only provider is identity.
func (c *Config) Resources() []string {
	var out []string
	for _, r := range c.rules {
		for _, res := range r.Resources {
			if !slices.Contains(out, res) {
				out = append(out, res)
			}
		}
	}
	return out
}

// Rules returns the configuration's resources list without secrets: for each entry, the
// resources and the providers with their key names, in order.
func (c *Config) Rules() []Rule {
	out := make([]Rule, len(c.rules))
	for i, r := range c.rules {
		out[i] = Rule{Resources: slices.Clone(r.Resources), Providers: slices.Clone(r.Providers)}
	}
	return out
}
