package learner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hintState is what the hint command remembers between calls: for each
// repository (its absolute path) and lab, which hints of each step it has
// shown, as a bit set (bit i: the step's hint i, counting from 0).
type hintState struct {
	Repos map[string]map[string]map[int]int `json:"repos"` // root -> lab name -> step -> hints shown (bits)
}

func (s *hintState) shown(root, labName string, step int) int {
	return s.Repos[root][labName][step]
}

func (s *hintState) setShown(root, labName string, step, n int) {
	if s.Repos == nil {
		s.Repos = map[string]map[string]map[int]int{}
	}
	if s.Repos[root] == nil {
		s.Repos[root] = map[string]map[int]int{}
	}
	if s.Repos[root][labName] == nil {
		s.Repos[root][labName] = map[int]int{}
	}
	s.Repos[root][labName][step] = n
}

// forget drops what was shown for a lab; it reports whether there was any.
func (s *hintState) forget(root, labName string) bool {
	_, had := s.Repos[root][labName]
	delete(s.Repos[root], labName)
	if len(s.Repos[root]) == 0 {
		delete(s.Repos, root)
	}
	return had
}

const hintStateDir = "gophereats-workshop"

// hintStatePath returns where the hint state lives: in the user's cache
// directory, else their config directory, and never inside the repository
// at root (the learner's checkout stays clean).
func hintStatePath(root string) (string, error) {
	var why []string
	for _, dir := range []func() (string, error){os.UserCacheDir, os.UserConfigDir} {
		d, err := dir()
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if !filepath.IsAbs(d) {
			why = append(why, d+" is not an absolute path")
			continue
		}
		p := filepath.Join(d, hintStateDir, "hints.json")
		if within(root, p) {
			why = append(why, p+" is inside the repository")
			continue
		}
		return p, nil
	}
	return "", errors.New(strings.Join(why, "; "))
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// loadHintState reads the state file. A missing file is an empty state; an
// unreadable or corrupt one is an empty state too, with a note saying why.
func loadHintState(file string) (state *hintState, note string) {
	state = &hintState{}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state, ""
	case err != nil:
		return state, fmt.Sprintf("could not read %s (%v): starting from the first hints", file, err)
	}
	if err := json.Unmarshal(data, state); err != nil {
		return &hintState{}, fmt.Sprintf("%s is corrupt (%v): starting from the first hints; it will be rewritten", file, err)
	}
	return state, ""
}

// save writes the state atomically: a temporary file in the same
// directory, then a rename over the old one, so that an interrupted write
// never leaves half a file.
func (s *hintState) save(file string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "hints-*.json.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
