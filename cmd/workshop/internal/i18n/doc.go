// Package i18n is the language the learner's commands speak (status,
// watch, check, hint, reset and solution): English, the default, or German.
// The German messages are a catalog of golang.org/x/text/message, keyed by
// the English format strings, so that the code says each message once, in
// English, and the catalog says it in German; a test keeps every message
// the learner's commands print in the catalog.
//
// It knows nothing of the workshop; every package of the tool may use it.
package i18n
