package recent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestListKeepsTheLastMaxValuesOldestFirst(t *testing.T) {
	l := NewList[int](3)
	for i := 1; i <= 2; i++ {
		_, dropped := l.Add(i)
		assert.False(t, dropped, "value %d fits", i)
	}
	assert.Equal(t, []int{1, 2}, l.All())
	for i := 3; i <= 7; i++ {
		old, dropped := l.Add(i)
		if i > 3 {
			assert.True(t, dropped, "value %d drops one", i)
			assert.Equal(t, i-3, old, "the oldest is dropped")
		}
	}
	assert.Equal(t, []int{5, 6, 7}, l.All(), "the last 3 of 1..7, oldest first")
	var each []int
	l.Each(func(v int) { each = append(each, v) })
	assert.Equal(t, []int{5, 6, 7}, each)
	assert.Equal(t, 3, l.Len())
	assert.Equal(t, 4, l.Dropped())
	assert.Panics(t, func() { NewList[int](0) })
}

func TestMapDropsTheOldestKey(t *testing.T) {
	m := NewMap[string, int](2)
	m.Put("a", 1)
	m.Put("b", 2)
	_, dropped := m.Put("a", 10)
	assert.False(t, dropped, "a kept key is replaced, not added")
	old, dropped := m.Put("c", 3)
	assert.True(t, dropped)
	assert.Equal(t, "a", old, "a was put first, so it goes first, though replaced since")
	_, ok := m.Get("a")
	assert.False(t, ok)
	v, ok := m.Get("c")
	assert.True(t, ok)
	assert.Equal(t, 3, v)
	var keys []string
	m.Each(func(k string, _ int) { keys = append(keys, k) })
	assert.Equal(t, []string{"b", "c"}, keys)
	assert.Equal(t, 2, m.Len())
	assert.Equal(t, 1, m.Dropped())
}
