package i18n

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

// A Language the tool speaks: its tag (for -lang and EnvVar) and its name
// in itself.
type Language struct{ Tag, Name string }

// Languages are the languages the tool speaks, the default first.
var Languages = []Language{{"en", "English"}, {"de", "Deutsch"}}

// EnvVar names the language when -lang does not: GOPHEREATS_LANG=de.
const EnvVar = "GOPHEREATS_LANG"

// Choose returns the tag of the language to speak: flag when it is not
// empty, else the environment variable EnvVar, else the locale (the first
// of LC_ALL, LC_MESSAGES and LANG that is set, "de_DE.UTF-8" naming de),
// else "en". A language asked for by flag or EnvVar that the tool does not
// speak is an error listing the ones it does; an unknown locale is English.
// getenv is os.Getenv, or a test's.
func Choose(flag string, getenv func(string) string) (string, error) {
	for _, c := range []struct{ value, from string }{{flag, "-lang"}, {getenv(EnvVar), EnvVar}} {
		if c.value == "" {
			continue
		}
		tag := strings.ToLower(c.value)
		if !known(tag) {
			return "", fmt.Errorf("%s %q: the workshop speaks %s", c.from, c.value, list())
		}
		return tag, nil
	}
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if locale := getenv(v); locale != "" {
			tag := strings.ToLower(locale)
			if i := strings.IndexAny(tag, "_.-@"); i >= 0 {
				tag = tag[:i]
			}
			if known(tag) {
				return tag, nil
			}
			return "en", nil
		}
	}
	return "en", nil
}

// known reports whether the tool speaks the language tag.
func known(tag string) bool {
	return slices.ContainsFunc(Languages, func(l Language) bool { return l.Tag == tag })
}

// list writes "en (English) and de (Deutsch)".
func list() string {
	var parts []string
	for _, l := range Languages {
		parts = append(parts, l.Tag+" ("+l.Name+")")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// Printer formats the learner's messages in one language. The nil Printer
// speaks English, as does New("en"): the format itself, through package
// fmt, so that English output is what the code says.
type Printer struct {
	tag string
	p   *message.Printer
}

// catalogs holds the translations, by language tag.
var catalogs = map[string]map[string]string{"de": german}

// New returns the Printer of tag, one of Languages' tags (English for any
// other).
func New(tag string) *Printer {
	msgs, ok := catalogs[tag]
	if !ok {
		return &Printer{tag: "en"}
	}
	lang := language.MustParse(tag)
	b := catalog.NewBuilder(catalog.Fallback(language.English))
	for key, text := range msgs {
		if err := b.SetString(lang, key, text); err != nil {
			panic(fmt.Sprintf("i18n: the %s catalog's message %q: %v", tag, key, err))
		}
	}
	return &Printer{tag: tag, p: message.NewPrinter(lang, message.Catalog(b))}
}

// Lang returns the Printer's language tag.
func (p *Printer) Lang() string {
	if p == nil {
		return "en"
	}
	return p.tag
}

// Sprintf formats the message format (an English format string, the
// catalog's key) in the Printer's language.
func (p *Printer) Sprintf(format string, a ...any) string {
	if p == nil || p.p == nil {
		return fmt.Sprintf(format, a...)
	}
	return p.p.Sprintf(format, a...)
}

// Fprintf writes the message format, in the Printer's language, to w.
func (p *Printer) Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return io.WriteString(w, p.Sprintf(format, a...))
}

// Fprintln writes the message s (no verbs), in the Printer's language, and
// a newline.
func (p *Printer) Fprintln(w io.Writer, s string) (int, error) {
	return io.WriteString(w, p.Text(s)+"\n")
}

// Text returns the message s, which has no verbs, in the Printer's
// language.
func (p *Printer) Text(s string) string {
	if p != nil {
		if t, ok := catalogs[p.tag][s]; ok {
			return t
		}
	}
	return s
}

// Errorf returns an error whose text is the message format in the
// Printer's language. format has no %w: an error that wraps another is
// the tool's own, not a message, and stays English (fmt.Errorf).
func (p *Printer) Errorf(format string, a ...any) error {
	return errors.New(p.Sprintf(format, a...))
}

// Has reports whether the catalog of the Printer's language has format
// (always true for English).
func (p *Printer) Has(format string) bool {
	if p == nil || p.p == nil {
		return true
	}
	_, ok := catalogs[p.tag][format]
	return ok
}
