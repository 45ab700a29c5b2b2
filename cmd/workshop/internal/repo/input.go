package repo

import (
	"bufio"
	"fmt"
	"strings"
)

// Input returns the reader of stdin's lines, made once so that no input
// is lost between two readers' buffers.
func (ws *Workspace) Input() *bufio.Reader {
	if ws.in == nil {
		ws.in = bufio.NewReader(ws.Stdin)
	}
	return ws.in
}

// Confirm asks question on stdout and reads a line from stdin: true for
// "y" or "yes" (any case), false for anything else or no input.
func (ws *Workspace) Confirm(question string) bool {
	fmt.Fprint(ws.Stdout, question)
	line, err := ws.Input().ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(ws.Stdout)
		fmt.Fprintln(ws.Stdout, "No answer: standard input is closed or not a terminal; add -y to answer yes without being asked.")
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
