package journalfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var buckets = [][]byte{[]byte("charges"), []byte("keys")}

// write makes a bbolt file at path holding the named buckets, with the
// meta bucket's layout when layout is not "".
func write(t *testing.T, path, layout string, names ...string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, n := range names {
			b, err := tx.CreateBucket([]byte(n))
			if err != nil {
				return err
			}
			if n == "meta" && layout != "" {
				if err := b.Put(layoutKey, []byte(layout)); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A new file is made a journal, and opens again; every file that is not
// this journal whole is refused with its path and what is wrong, and left
// as it was.
func TestOpenRefusesWhatIsNotItsJournal(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	db, err := Open(good, "payment journal", "fd-1", buckets)
	if err != nil {
		t.Fatalf("a new file: %v", err)
	}
	db.Close()
	if db, err = Open(good, "payment journal", "fd-1", buckets); err != nil {
		t.Fatalf("the journal made a moment ago: %v", err)
	}
	db.Close()

	for _, tc := range []struct {
		name, layout string
		buckets      []string
		want         string
	}{
		{"another program's file", "", []string{"users"}, `the buckets users and no layout`},
		{"another layout", "fd-0", []string{"meta", "charges", "keys"}, `layout is "fd-0", not "fd-1"`},
		{"a bucket missing", "fd-1", []string{"meta", "charges"}, `bucket "keys" is missing`},
		{"a foreign bucket beside the journal's", "fd-1", []string{"meta", "charges", "keys", "users"}, `bucket "users" that is no part of layout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "payment.db")
			write(t, path, tc.layout, tc.buckets...)
			before, _ := os.ReadFile(path)
			_, err := Open(path, "payment journal", "fd-1", buckets)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Open of %s: %v; want an error naming %s and %q", tc.name, err, path, tc.want)
			}
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Errorf("Open changed the file it refused (%d bytes before, %d after)", len(before), len(after))
			}
		})
	}

	t.Run("a file this program may not write", func(t *testing.T) {
		if runtime.GOOS == "windows" || os.Geteuid() == 0 {
			t.Skip("file modes do not bind root, nor Windows' ACLs")
		}
		if err := os.Chmod(good, 0o400); err != nil {
			t.Fatal(err)
		}
		_, err := Open(good, "payment journal", "fd-1", buckets)
		if err == nil || !strings.Contains(err.Error(), "write access") || strings.Contains(err.Error(), "damaged") {
			t.Errorf("Open of a read-only journal: %v; want it to ask for write access, not call the file damaged", err)
		}
	})
}
