package gen

// rng is a small deterministic generator (splitmix64). Every object derives its own from the seed
// and its index, so objects can be built in any order, on any goroutine, and built again later for
// an update or a tombstone with the same result.
type rng struct{ s uint64 }

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func newRNG(seed int64, parts ...uint64) *rng {
	s := mix(uint64(seed))
	for _, p := range parts {
		s = mix(s ^ p)
	}
	return &rng{s: s}
}

func (r *rng) u64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s - 0x9e3779b97f4a7c15)
}

// intn returns a number in [0, n). n must be > 0.
func (r *rng) intn(n int) int { return int(r.u64() % uint64(n)) }

// between returns a number in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// chance reports true with probability p/1000.
func (r *rng) chance(permille int) bool { return r.intn(1000) < permille }

func (r *rng) pick(s []string) string { return s[r.intn(len(s))] }

// digits returns n random characters of alphabet, whose length is 1<<bits: each takes the next bits
// bits of a random word, a new word when fewer than bits are left.
func (r *rng) digits(n int, alphabet string, bits int) string {
	perWord := 64 / bits
	mask := uint64(len(alphabet) - 1)
	b := make([]byte, n)
	var v uint64
	for i := range b {
		if i%perWord == 0 {
			v = r.u64()
		}
		b[i] = alphabet[v&mask]
		v >>= bits
	}
	return string(b)
}

// hex returns n random hex digits.
func (r *rng) hex(n int) string { return r.digits(n, "0123456789abcdef", 4) }

const alnum = "bcdfghjklmnpqrstvwxz2456789"

// alnum returns n characters of the alphabet Kubernetes uses for generated names.
func (r *rng) alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.intn(len(alnum))]
	}
	return string(b)
}

// fill writes random bytes into b.
func (r *rng) fill(b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := r.u64()
		for j := i; j < i+8 && j < len(b); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
}

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// base64ish returns n random characters of the base64 alphabet (certificates, tokens, blobs).
func (r *rng) base64ish(n int) string { return r.digits(n, b64, 6) }

// uniqueSuffix returns a 5-character name suffix that is different for every idx below 27^5: a
// bijection (multiplication by a number coprime with the modulus), so generated names never collide.
func uniqueSuffix(idx int64) string {
	const n = 27 * 27 * 27 * 27 * 27
	v := (uint64(idx)*7919 + 12345) % n
	b := make([]byte, 5)
	for i := range b {
		b[i] = alnum[v%27]
		v /= 27
	}
	return string(b)
}
