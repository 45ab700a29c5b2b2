package payment

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/journalfile"
)

// Journal is the payment service's durable state, in one bbolt file
// (go.etcd.io/bbolt: one writer, fsync on every commit): every charge,
// and with each charge the idempotency key it was made under, written in
// one transaction that commits before the charge's answer goes out
// (Ledger.Journal). A process that restarts on the same file reads the
// charges back into its ledger (Load) and replays a key's charge instead
// of charging again (Replay), even though its KeyStore, in memory, starts
// empty. Open one with OpenJournal; it is safe for concurrent use.
//
// It keeps the Ledger's bound of charges (the 20,000 most recent by
// default) and at most MaxKeys keys, each for at most KeyTTL; the oldest
// go first. A key that is gone charges again if it comes back, as the
// IETF draft allows for a key older than its published lifetime.
type Journal struct {
	db   *bolt.DB
	path string
	// MaxKeys and KeyTTL bound the keys kept; zero means DefaultMaxKeys
	// and DefaultKeyTTL. Set them before the first charge.
	MaxKeys int
	KeyTTL  time.Duration
	// MaxCharges bounds the charges kept; zero means DefaultMaxCharges.
	MaxCharges int
}

// Bounds of a Journal's keys.
const (
	DefaultMaxKeys = 100_000
	DefaultKeyTTL  = 24 * time.Hour
)

// journalLayout names the layout of the file; a file with another one is
// refused, never read as if it were this one.
const journalLayout = "fooddelivery-payment-1"

var (
	bucketMeta    = []byte("meta")
	bucketCharges = []byte("charges") // seq (8 bytes, big-endian) -> Charge JSON
	bucketKeys    = []byte("keys")    // key -> keyEntry JSON
	bucketKeySeq  = []byte("keyseq")  // seq -> key, oldest first
	keyNextKey    = []byte("nextkey")
	keyKeyCount   = []byte("keycount")
)

// keyEntry is what the journal keeps per idempotency key: the request it
// was used for and the charge it made.
type keyEntry struct {
	Request fooddelivery.ChargeRequest `json:"request"`
	Charge  fooddelivery.Charge        `json:"charge"`
	At      time.Time                  `json:"at"`
	Seq     uint64                     `json:"seq"`
}

// OpenJournal opens the journal at path, creating it when there is no
// file. It fails, with the path and what to do, when the file is locked
// by another process (within 2 s), is not a bbolt file or is damaged, or
// holds another layout: it never starts empty on top of a file it cannot
// read.
func OpenJournal(path string) (*Journal, error) {
	db, err := journalfile.Open(path, "payment journal", journalLayout, [][]byte{bucketCharges, bucketKeys, bucketKeySeq})
	if err != nil {
		return nil, err
	}
	return &Journal{db: db, path: path}, nil
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// Close closes the file.
func (j *Journal) Close() error { return j.db.Close() }

// Load reads the journal's charges into l, which must be empty and not
// yet in use: its charge count continues from the journal's, so ids are
// never given twice.
func (j *Journal) Load(l *Ledger) error {
	return j.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCharges).ForEach(func(k, v []byte) error {
			var c fooddelivery.Charge
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("payment journal %s: charge %d: %v", j.path, binary.BigEndian.Uint64(k), err)
			}
			l.restore(c, int(binary.BigEndian.Uint64(k)))
			return nil
		})
	})
}

// Replay returns the charge made under key, when the journal has one:
// ok true with the charge for the same request, or ErrKeyMismatch for a
// different one (another order, amount or card).
func (j *Journal) Replay(key string, req fooddelivery.ChargeRequest) (c fooddelivery.Charge, ok bool, err error) {
	if key == "" {
		return c, false, nil
	}
	var e keyEntry
	err = j.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKeys).Get([]byte(key))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &e)
	})
	if err != nil || !ok {
		return c, false, err
	}
	if time.Since(e.At) > j.keyTTL() {
		return c, false, nil
	}
	if e.Request != req {
		return c, false, ErrKeyMismatch
	}
	return e.Charge, true, nil
}

// commit writes c, the charge number seq, and the key it was made under
// ("" for none) with its request, in one transaction, and drops the
// oldest charges and keys beyond the bounds. It returns once the
// transaction is on disk.
func (j *Journal) commit(seq int, c fooddelivery.Charge, key string, req fooddelivery.ChargeRequest) error {
	return j.db.Update(func(tx *bolt.Tx) error {
		charges := tx.Bucket(bucketCharges)
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := charges.Put(u64(uint64(seq)), raw); err != nil {
			return err
		}
		// Charge numbers run without gaps, so the one that falls out of
		// the bound is seq - MaxCharges.
		if old := seq - j.maxCharges(); old > 0 {
			if err := charges.Delete(u64(uint64(old))); err != nil {
				return err
			}
		}
		if key == "" {
			return nil
		}
		meta, keys, order := tx.Bucket(bucketMeta), tx.Bucket(bucketKeys), tx.Bucket(bucketKeySeq)
		next, count := uint64(1), uint64(0)
		if v := meta.Get(keyNextKey); v != nil {
			next = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(keyKeyCount); v != nil {
			count = binary.BigEndian.Uint64(v)
		}
		if keys.Get([]byte(key)) == nil {
			count++
		}
		raw, err = json.Marshal(keyEntry{Request: req, Charge: c, At: time.Now(), Seq: next})
		if err != nil {
			return err
		}
		if err := keys.Put([]byte(key), raw); err != nil {
			return err
		}
		if err := order.Put(u64(next), []byte(key)); err != nil {
			return err
		}
		// Evict the oldest keys: beyond MaxKeys, or older than KeyTTL.
		cur := order.Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.First() {
			var e keyEntry
			raw := keys.Get(v)
			if raw == nil || json.Unmarshal(raw, &e) != nil || e.Seq != binary.BigEndian.Uint64(k) {
				// The key was used again later (or is gone): a stale
				// entry of the order.
				if err := cur.Delete(); err != nil {
					return err
				}
				continue
			}
			if count <= uint64(j.maxKeys()) && time.Since(e.At) <= j.keyTTL() {
				break
			}
			if err := keys.Delete(v); err != nil {
				return err
			}
			if err := cur.Delete(); err != nil {
				return err
			}
			count--
		}
		if err := meta.Put(keyKeyCount, u64(count)); err != nil {
			return err
		}
		return meta.Put(keyNextKey, u64(next+1))
	})
}

// Keys returns how many idempotency keys the journal holds.
func (j *Journal) Keys() (n int, err error) {
	err = j.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyKeyCount); v != nil {
			n = int(binary.BigEndian.Uint64(v))
		}
		return nil
	})
	return n, err
}

func (j *Journal) maxKeys() int {
	if j.MaxKeys > 0 {
		return j.MaxKeys
	}
	return DefaultMaxKeys
}

func (j *Journal) keyTTL() time.Duration {
	if j.KeyTTL > 0 {
		return j.KeyTTL
	}
	return DefaultKeyTTL
}

func (j *Journal) maxCharges() int {
	if j.MaxCharges > 0 {
		return j.MaxCharges
	}
	return DefaultMaxCharges
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}
