package lab

import "strings"

// FencedLines reports, for each of lines, whether it belongs to a fenced
// code block (CommonMark), its opening and closing fences included. An
// unclosed fence runs to the end.
func FencedLines(lines []string) []bool {
	in := make([]bool, len(lines))
	var open Fence
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		switch {
		case open.N > 0:
			in[i] = true
			if open.closesLine(line) {
				open = Fence{}
			}
		case fenceLine(line).N > 0:
			in[i] = true
			open = fenceLine(line)
		}
	}
	return in
}
