package term

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Progress writes a command's output and, on a terminal, keeps one status
// line below it that a ticker redraws every second ("3 of 9 labs done;
// building and testing 04 05"), so that a long first run shows it is alive.
// Elsewhere (a pipe, a file, CI logs) it writes the output only.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	Terminal bool
	line     func() string // the status line's text; nil: none
	shown    bool          // the status line is on the screen
	start    time.Time
	quit     chan struct{}
	done     sync.WaitGroup
}

// statusWidth is the most columns the status line takes.
const statusWidth = 79

// Above returns a writer to w (another stream on the same terminal, such
// as stdout when the status line is on stderr) that clears the status line
// before each write and draws it again after, so that the two never share
// a row.
func (p *Progress) Above(w io.Writer) io.Writer {
	return aboveWriter{p, w}
}

type aboveWriter struct {
	p *Progress
	w io.Writer
}

func (a aboveWriter) Write(b []byte) (n int, err error) {
	a.p.Print(func(io.Writer) { n, err = a.w.Write(b) })
	return n, err
}

// New returns a Progress writing to w; its status line shows only when w
// is a terminal.
func New(w io.Writer) *Progress {
	return &Progress{w: w, Terminal: IsTerminal(w), start: time.Now()}
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Write writes p above the status line.
func (p *Progress) Write(b []byte) (int, error) {
	var n int
	var err error
	p.Print(func(w io.Writer) { n, err = w.Write(b) })
	return n, err
}

// Print runs f with the status line cleared, under the lock, and redraws
// the status line after it.
func (p *Progress) Print(f func(w io.Writer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	f(p.w)
	p.draw()
}

// Status starts redrawing the status line from line every second, on a
// terminal only.
func (p *Progress) Status(line func() string) {
	if !p.Terminal {
		return
	}
	p.mu.Lock()
	p.line = line
	p.draw()
	p.mu.Unlock()
	p.quit = make(chan struct{})
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
				p.mu.Lock()
				p.clear()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

// Stop removes the status line for good.
func (p *Progress) Stop() {
	if p.quit != nil {
		close(p.quit)
		p.done.Wait()
		p.quit = nil
	}
	p.mu.Lock()
	p.clear()
	p.line = nil
	p.mu.Unlock()
}

func (p *Progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *Progress) draw() {
	if p.line == nil || !p.Terminal {
		return
	}
	text := fmt.Sprintf("  ... %s (%ds)", p.line(), int(time.Since(p.start).Seconds()))
	if r := []rune(text); len(r) > statusWidth {
		text = string(r[:statusWidth-3]) + "..." // one row even on an 80-column terminal
	}
	fmt.Fprint(p.w, strings.ReplaceAll(text, "\n", " "))
	p.shown = true
}
