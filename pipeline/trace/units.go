package trace

// units keeps the units of a file that are open (turns of a trace,
// streams of a capture: begun, not yet ended), the order they began in,
// and every ID seen, so that a unit begins once and nothing comes for it
// after its end.
type units[T any] struct {
	open  map[string]T
	seen  map[string]bool
	order []string // IDs in the order they began; those ended are skipped by drain
}

func newUnits[T any]() units[T] {
	return units[T]{open: map[string]T{}, seen: map[string]bool{}}
}

// known reports whether unit id began, ended or not.
func (u *units[T]) known(id string) bool { return u.seen[id] }

// begin opens unit id with v; false when id was seen before.
func (u *units[T]) begin(id string, v T) bool {
	if u.seen[id] {
		return false
	}
	u.seen[id] = true
	u.open[id] = v
	u.order = append(u.order, id)
	return true
}

// get returns the open unit id; ended says, when it is not open, whether
// it was open once.
func (u *units[T]) get(id string) (v T, ok, ended bool) {
	if v, ok := u.open[id]; ok {
		return v, true, false
	}
	return v, false, u.seen[id]
}

// end closes unit id.
func (u *units[T]) end(id string) { delete(u.open, id) }

// drain closes and returns the unit that began first of those still
// open, for the end of the input; false when none is.
func (u *units[T]) drain() (id string, v T, ok bool) {
	for len(u.order) > 0 {
		id, u.order = u.order[0], u.order[1:]
		if v, ok := u.open[id]; ok {
			delete(u.open, id)
			return id, v, true
		}
	}
	return "", v, false
}
