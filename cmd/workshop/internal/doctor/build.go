package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gophereats/resilience/cmd/workshop/internal/lab"
	"github.com/gophereats/resilience/cmd/workshop/internal/labrun"
	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
)

// buildLimit bounds each go command of the build; a first build on a
// loaded laptop takes a few minutes.
const buildLimit = 20 * time.Minute

// build runs every lab's tests once as status does, printing a line per
// lab as it finishes, then builds the tool and the system (a lab of the
// learner's that does not compile is a warning of its own), then, when
// race is true, the labs' tests with -race, as check runs them. It prints
// one line for the whole, and returns an error only when the context ended.
func build(ctx context.Context, ws *repo.Workspace, r *report, race bool) error {
	start := time.Now()
	_, infos, err := labrun.Present(ws)
	if err != nil {
		r.line(failing, "build", "the labs cannot be read: "+err.Error(), "run doctor from an intact clone of the workshop")
		return nil
	}
	fmt.Fprintf(r.w, "  ...   building and running every lab's tests once, as status does (the first time a minute or more; the progress line shows what runs)\n")
	var broken []string
	_, err = labrun.Run(ctx, ws, infos, r.w, func(w io.Writer, o lab.Outcome, cached bool) {
		note := ""
		if cached {
			note = ", unchanged since the last run"
		}
		if o.CompileErrs != nil {
			broken = append(broken, o.Info.Num())
			fmt.Fprintf(w, "        lab %s %s: does not compile%s\n", o.Info.Num(), o.Info.Title(), note)
			return
		}
		fmt.Fprintf(w, "        lab %s %s: built, %d of %d steps pass%s\n", o.Info.Num(), o.Info.Title(), o.Passed(), len(o.Steps), note)
	})
	if err != nil {
		return err
	}
	args := []string{"build"}
	for _, dir := range []string{"cmd", "fooddelivery"} {
		if _, err := os.Stat(ws.Abs(dir)); err == nil {
			args = append(args, "./"+dir+"/...")
		}
	}
	r.w.Status(func() string { return "building the system and the tool (go build ./cmd/... ./fooddelivery/...)" })
	res := repo.Result{}
	if len(args) > 1 {
		res = ws.GoCmd(ctx, buildLimit, args...)
	}
	r.w.Stop()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if res.Err != nil {
		r.line(failing, "build", "the system or the tool does not build (go build ./cmd/... ./fooddelivery/...): "+strings.Join(repo.FirstLines(res.Combined(), 3), " / "),
			"git status shows what changed outside labs/; git stash or a fresh clone puts the workshop back")
		return nil
	}
	if race {
		r.w.Status(func() string { return "building the labs' tests with -race, as check runs them" })
		args := []string{"test", "-race", "-count=1", "-run", "^$"}
		for _, info := range infos {
			args = append(args, info.Pattern())
		}
		res = ws.GoCmd(ctx, buildLimit, args...)
		r.w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.Err != nil && len(broken) == 0 {
			r.line(warned, "build", "the labs' tests do not build with -race: "+strings.Join(repo.FirstLines(res.Combined(), 3), " / "),
				"check NN then runs without the race detector")
		}
	}
	took := time.Since(start).Round(time.Second)
	if len(broken) > 0 {
		r.line(warned, "build", fmt.Sprintf("every package builds, but your code of lab %s does not compile (%s)", strings.Join(broken, ", "), took),
			"go run ./cmd/workshop check NN shows the compile errors; reset NN puts the starter back")
		return nil
	}
	r.line(passed, "build", fmt.Sprintf("every lab's tests, the system and the tool build (%s); status answers from the caches now", took), "")
	return nil
}
