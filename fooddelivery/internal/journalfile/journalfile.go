// Package journalfile opens the bbolt files in which payment keeps its
// ledger and keys and the order service its orders (-data), and refuses,
// with the path and what to do, every file it cannot be sure is the
// service's own: locked by another process, unreadable, of another
// layout, with a bucket missing or one that is no part of the layout. A
// service never starts empty on top of a file it could not read.
package journalfile

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// LockTimeout is how long Open waits for another process's lock.
const LockTimeout = 2 * time.Second

// metaBucket and layoutKey hold a journal's layout name.
var (
	metaBucket = []byte("meta")
	layoutKey  = []byte("layout")
)

// Open opens (or creates) the journal at path of what ("payment journal")
// with the given layout name and data buckets. A new file gets the layout
// and the buckets; a file with any bucket gets them only when its layout
// is this one and every bucket is there and no other. Errors name path
// and say what to do.
func Open(path, what, layout string, buckets [][]byte) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: LockTimeout})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("%s %s is locked by another process: stop the other service that uses it, or give this one another -data folder", what, path)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%s %s cannot be opened for writing (%v): give this program write access to the folder and the file, or another -data folder; the file itself may be fine, so keep it", what, path, err)
	case err != nil:
		return nil, fmt.Errorf("%s %s cannot be opened (%v): it is damaged or not a journal; move it away to start with an empty one, or give another -data folder", what, path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		var have []string
		if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			have = append(have, string(name))
			return nil
		}); err != nil {
			return err
		}
		if len(have) == 0 {
			meta, err := tx.CreateBucket(metaBucket)
			if err != nil {
				return err
			}
			if err := meta.Put(layoutKey, []byte(layout)); err != nil {
				return err
			}
			for _, b := range buckets {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return nil
		}
		meta := tx.Bucket(metaBucket)
		if meta == nil || meta.Get(layoutKey) == nil {
			return fmt.Errorf("it holds the buckets %s and no layout: it was written by something else", strings.Join(have, ", "))
		}
		if got := string(meta.Get(layoutKey)); got != layout {
			return fmt.Errorf("its layout is %q, not %q: it was written by something else", got, layout)
		}
		want := []string{string(metaBucket)}
		for _, b := range buckets {
			want = append(want, string(b))
		}
		for _, w := range want {
			if !slices.Contains(have, w) {
				return fmt.Errorf("its bucket %q is missing: the journal is damaged", w)
			}
		}
		for _, h := range have {
			if !slices.Contains(want, h) {
				return fmt.Errorf("it holds a bucket %q that is no part of layout %q: something else wrote into it", h, layout)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s %s: %v; move it away to start with an empty one, or give another -data folder", what, path, err)
	}
	return db, nil
}
