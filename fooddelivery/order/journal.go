package order

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/journalfile"
)

// Journal is the order service's durable state, in one bbolt file
// (go.etcd.io/bbolt: fsync on every commit): every order, written before
// the order service answers for it (Store.Journal), and read back by a
// restart (Load). It keeps the Store's bound: the most recent Max orders
// by when they were first stored. Open one with OpenJournal; it is safe
// for concurrent use.
type Journal struct {
	db   *bolt.DB
	path string
}

const journalLayout = "fooddelivery-order-1"

var (
	bucketMeta   = []byte("meta")
	bucketOrders = []byte("orders") // id -> journalEntry JSON
	bucketSeq    = []byte("seq")    // first-stored number (8 bytes, big-endian) -> id
	keyNext      = []byte("next")
	keyCount     = []byte("count")
)

type journalEntry struct {
	Order fooddelivery.Order `json:"order"`
	At    time.Time          `json:"at"`
	Seq   uint64             `json:"seq"`
}

// OpenJournal opens the journal at path, creating it when there is no
// file. It fails, with the path and what to do, when the file is locked
// by another process (within 2 s), is damaged or not a bbolt file, or
// holds another layout: it never starts empty on top of a file it cannot
// read.
func OpenJournal(path string) (*Journal, error) {
	db, err := journalfile.Open(path, "order journal", journalLayout, [][]byte{bucketOrders, bucketSeq})
	if err != nil {
		return nil, err
	}
	return &Journal{db: db, path: path}, nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.db.Close() }

// Load puts the journal's orders into s, oldest first, with the times
// they were first stored. s must be new, and its Journal not yet set.
func (j *Journal) Load(s *Store) error {
	return j.db.View(func(tx *bolt.Tx) error {
		orders := tx.Bucket(bucketOrders)
		return tx.Bucket(bucketSeq).ForEach(func(_, id []byte) error {
			var e journalEntry
			raw := orders.Get(id)
			if raw == nil {
				return nil
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("order journal %s: order %s: %v", j.path, id, err)
			}
			s.restore(e.Order, e.At)
			return nil
		})
	})
}

// put writes o, first stored at at, and drops the oldest orders beyond
// max. It returns once the transaction is on disk.
func (j *Journal) put(o fooddelivery.Order, at time.Time, max int) error {
	return j.db.Update(func(tx *bolt.Tx) error {
		meta, orders, seq := tx.Bucket(bucketMeta), tx.Bucket(bucketOrders), tx.Bucket(bucketSeq)
		var e journalEntry
		if raw := orders.Get([]byte(o.ID)); raw != nil {
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			e.Order = o
			raw, err := json.Marshal(e)
			if err != nil {
				return err
			}
			return orders.Put([]byte(o.ID), raw)
		}
		next, count := uint64(1), uint64(0)
		if v := meta.Get(keyNext); v != nil {
			next = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(keyCount); v != nil {
			count = binary.BigEndian.Uint64(v)
		}
		raw, err := json.Marshal(journalEntry{Order: o, At: at, Seq: next})
		if err != nil {
			return err
		}
		if err := orders.Put([]byte(o.ID), raw); err != nil {
			return err
		}
		if err := seq.Put(u64(next), []byte(o.ID)); err != nil {
			return err
		}
		count++
		cur := seq.Cursor()
		for k, id := cur.First(); k != nil && count > uint64(max); k, id = cur.First() {
			if err := orders.Delete(id); err != nil {
				return err
			}
			if err := cur.Delete(); err != nil {
				return err
			}
			count--
		}
		if err := meta.Put(keyCount, u64(count)); err != nil {
			return err
		}
		return meta.Put(keyNext, u64(next+1))
	})
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}
