package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestClipMessageKeepsBothEndsOnRuneBoundaries(t *testing.T) {
	short := strings.Repeat("é", maxMessageBytes/2)
	assert.Equal(t, short, clipMessage(short), "a message of maxMessageBytes is sent whole")

	long := "Cannot query field \"" + strings.Repeat("é", 50_000) + "\" on type \"Query\". (at line 1, column 3)"
	got := clipMessage(long)
	assert.True(t, utf8.ValidString(got), "cuts fall on rune boundaries")
	assert.LessOrEqual(t, len(got), maxMessageBytes+40)
	assert.True(t, strings.HasPrefix(got, "Cannot query field \"éé"), "the beginning says what is wrong")
	assert.True(t, strings.HasSuffix(got, "(at line 1, column 3)"), "the end says where")
	assert.Contains(t, got, " bytes left out ...] ")
}
