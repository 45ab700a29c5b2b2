// Package recent keeps the most recent entries of a record, up to a
// count, so that a service left running for a day holds a bounded amount
// of memory: a List of values and a Map of keyed values, each dropping its
// oldest entry (by insertion) once it holds its maximum. Neither is safe
// for concurrent use; the stores that hold them lock.
package recent

// List holds the last Max values added, oldest first: a ring of at most
// Max values. The zero value is not usable; call NewList.
type List[T any] struct {
	ring    []T
	next    int // where the next value goes once the ring is full
	max     int
	dropped int
}

// NewList returns an empty list that keeps the last max values; max must
// be at least 1.
func NewList[T any](max int) *List[T] {
	if max < 1 {
		panic("recent: a list must keep at least one value")
	}
	return &List[T]{max: max}
}

// Add appends v, dropping the oldest value when the list is full. It
// returns the dropped value and true, or the zero value and false.
func (l *List[T]) Add(v T) (old T, dropped bool) {
	if len(l.ring) < l.max {
		l.ring = append(l.ring, v)
		return old, false
	}
	old, l.ring[l.next] = l.ring[l.next], v
	l.next = (l.next + 1) % l.max
	l.dropped++
	return old, true
}

// All returns the values kept, oldest first, in a new slice.
func (l *List[T]) All() []T {
	out := make([]T, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// Each calls f with each value kept, oldest first.
func (l *List[T]) Each(f func(T)) {
	for _, v := range l.ring[l.next:] {
		f(v)
	}
	for _, v := range l.ring[:l.next] {
		f(v)
	}
}

// Len returns how many values are kept: at most Max.
func (l *List[T]) Len() int { return len(l.ring) }

// Max returns how many values the list keeps at most.
func (l *List[T]) Max() int { return l.max }

// Dropped returns how many values were dropped to make room.
func (l *List[T]) Dropped() int { return l.dropped }

// Map holds values by key, at most Max of them; a new key past Max drops
// the oldest key (the one first put longest ago). The zero value is not
// usable; call NewMap.
type Map[K comparable, V any] struct {
	m    map[K]V
	keys *List[K]
}

// NewMap returns an empty map that keeps at most max keys; max must be at
// least 1.
func NewMap[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{m: map[K]V{}, keys: NewList[K](max)}
}

// Put stores v under k. A key already kept keeps its place; a new one is
// the newest, and when the map is full the oldest key and its value are
// dropped and returned (dropped is true).
func (m *Map[K, V]) Put(k K, v V) (oldKey K, dropped bool) {
	if _, ok := m.m[k]; ok {
		m.m[k] = v
		return oldKey, false
	}
	m.m[k] = v
	oldKey, dropped = m.keys.Add(k)
	if dropped {
		delete(m.m, oldKey)
	}
	return oldKey, dropped
}

// Get returns the value of k; ok is false when k is not kept.
func (m *Map[K, V]) Get(k K) (v V, ok bool) {
	v, ok = m.m[k]
	return v, ok
}

// Each calls f with each key kept and its value, oldest key first.
func (m *Map[K, V]) Each(f func(K, V)) {
	m.keys.Each(func(k K) { f(k, m.m[k]) })
}

// Len returns how many keys are kept: at most Max.
func (m *Map[K, V]) Len() int { return len(m.m) }

// Max returns how many keys the map keeps at most.
func (m *Map[K, V]) Max() int { return m.keys.Max() }

// Dropped returns how many keys were dropped to make room.
func (m *Map[K, V]) Dropped() int { return m.keys.Dropped() }
