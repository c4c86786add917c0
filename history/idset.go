package history

// bitset is a set of positive ids below maxDense.
type bitset []uint64

func (b *bitset) set(id int64) {
	for int64(len(*b))*64 <= id {
		*b = append(*b, make([]uint64, max(len(*b), 1024))...)
	}
	(*b)[id/64] |= 1 << (id % 64)
}

func (b bitset) has(id int64) bool {
	return id > 0 && id < int64(len(b))*64 && b[id/64]&(1<<(id%64)) != 0
}

// idSet maps the ids of the operations in flight, usually a few, to an int: a slice searched
// through while they are few, a map past that. (With one insert and one delete per operation, a
// Go map spends its time rehashing its tombstones.)
type idSet struct {
	ids []int64
	at  []int
	m   map[int64]int
}

const idSetSmall = 64

func (x *idSet) len() int { return len(x.ids) + len(x.m) }

func (x *idSet) put(id int64, v int) {
	if x.m != nil {
		x.m[id] = v
		return
	}
	for k, i := range x.ids {
		if i == id {
			x.at[k] = v
			return
		}
	}
	if len(x.ids) < idSetSmall {
		x.ids, x.at = append(x.ids, id), append(x.at, v)
		return
	}
	x.m = make(map[int64]int, 2*idSetSmall)
	for k, i := range x.ids {
		x.m[i] = x.at[k]
	}
	x.m[id] = v
	x.ids, x.at = nil, nil
}

func (x *idSet) get(id int64) (int, bool) {
	if x.m != nil {
		v, ok := x.m[id]
		return v, ok
	}
	for k, i := range x.ids {
		if i == id {
			return x.at[k], true
		}
	}
	return 0, false
}

func (x *idSet) del(id int64) {
	if x.m != nil {
		delete(x.m, id)
		return
	}
	for k, i := range x.ids {
		if i == id {
			n := len(x.ids) - 1
			x.ids[k], x.at[k] = x.ids[n], x.at[n]
			x.ids, x.at = x.ids[:n], x.at[:n]
			return
		}
	}
}
