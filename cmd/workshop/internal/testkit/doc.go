// Package testkit holds what the tool's tests in several packages share:
// a cache directory of their own (UseTempCacheDir), a buffer to poll
// (SyncBuffer, WaitFor), sample README and HINTS texts, and a reader of
// printed tables (TableCells). Only tests import it.
package testkit
