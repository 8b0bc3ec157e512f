package encryption

// WriteInfo is how kube-apiserver would encrypt a new object of the given
// group and resource ("" and "secrets"; "networking.k8s.io" and
// "ipaddresses"): the first provider of the first resources entry that
// covers it, as the apiserver's encryption-config loader orders them (exact
// names, then "*.group", then "*.*"). Identity when nothing covers it.
func (c *Config) WriteInfo(group, resource string) Info {
	if c == nil {
		return Info{Provider: ProviderIdentity}
	}
	exact, wildGroup, all := -1, -1, -1
	for i, r := range c.rules {
		for _, s := range r.Resources {
			gr := parseGroupResource(s)
			switch {
			case gr.resource == resource && gr.group == group && exact < 0:
				exact = i
			case gr.resource == "*" && gr.group == group && wildGroup < 0:
				wildGroup = i
			case gr.resource == "*" && gr.group == "*" && all < 0:
				all = i
			}
		}
	}
	for _, i := range []int{exact, wildGroup, all} {
		if i >= 0 && len(c.rules[i].Providers) > 0 {
			return c.rules[i].Providers[0]
		}
	}
	return Info{Provider: ProviderIdentity}
}
