package idpool

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// leaseAnswer is POST /apps/:key/segments's answer.
type leaseAnswer struct {
	First     string `json:"first"`
	Last      string `json:"last"`
	Count     int64  `json:"count"`
	Delta     int64  `json:"delta"`
	Remainder int64  `json:"remainder"`
}

// segment: value is the next id to hand out; ids up to last, delta apart.
type segment struct {
	value      atomic.Int64
	first      int64
	last       int64
	delta      int64
	loadNextAt int64 // the id whose handing out starts the next lease: exactly one caller draws it
}

// LeasedIDs are ids of one trend entity handed out in this process from
// segments the service leases (POST /apps/:key/segments): Leaf's double buffer.
// Once PrefetchAt (10 %) of the current segment is used the next one is leased
// in the background; the lease size doubles while a segment lasts less than
// TargetSegment (1 s) and halves when one lasts more than twice that.
//
// Safe for concurrent use: Next from a current segment is one atomic add and two
// compares; only switching segments takes a lock. Every id is ≡ remainder (mod
// delta) as the lease says. Ids grow within a segment; across goroutines and
// processes they are unique, not ordered (what a trend entity promises). Ids
// left when the process stops are wasted, never repeated.
type LeasedIDs struct {
	key     string
	o       LeaseOptions
	fetch   func(size int) (leaseAnswer, error)
	current atomic.Pointer[segment]

	mu       sync.Mutex
	spare    *segment
	loading  bool
	failure  error
	closed   bool
	changed  chan struct{} // closed when a lease ends
	size     int
	baseSize int
	lastAt   time.Time
	leases   int64
	// Read and written by one lease at a time (startLease runs one).
	granted int // the largest lease granted so far
	cap     int // no lease above it once one larger than granted was refused; 0: none yet
}

func spent() *segment { return &segment{first: 0, last: -1, delta: 1, loadNextAt: -1} }

func newLeasedIDs(key string, o LeaseOptions, fetch func(int) (leaseAnswer, error)) *LeasedIDs {
	l := &LeasedIDs{key: key, o: o, fetch: fetch, changed: make(chan struct{})}
	l.current.Store(spent())
	return l
}

// Next returns the next id; it waits (up to LeaseOptions.Wait) only when both segments are used up.
func (l *LeasedIDs) Next() (int64, error) {
	s := l.current.Load()
	id := s.value.Add(s.delta) - s.delta
	// id < first: the add overflowed past 2^63 - 1 on a spent segment at the top of the line.
	if id <= s.last && id >= s.first {
		if id == s.loadNextAt {
			l.prefetch()
		}
		return id, nil
	}
	return l.nextSlow()
}

// Take returns count ids, each as Next hands them out.
func (l *LeasedIDs) Take(count int) ([]int64, error) {
	ids := make([]int64, count)
	for i := range ids {
		id, err := l.Next()
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// Open leases the first segment now and waits for it, however long the lease
// takes (it ends within the client's Deadline); it returns the lease's failure.
// Else the first Next leases it and waits at most LeaseOptions.Wait.
func (l *LeasedIDs) Open() error {
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return ErrClosed
		}
		s := l.current.Load()
		if l.spare != nil || s.value.Load() <= s.last {
			l.mu.Unlock()
			return nil
		}
		if l.failure != nil && !l.loading {
			err := l.failure
			l.failure = nil
			l.mu.Unlock()
			return err
		}
		l.startLease()
		changed := l.changed
		l.mu.Unlock()
		<-changed
		l.mu.Lock()
	}
}

// Leases is how many segments were leased so far.
func (l *LeasedIDs) Leases() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leases
}

// Close stops leasing; later calls fail with ErrClosed.
func (l *LeasedIDs) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.spare = nil
	l.current.Store(spent())
}

func (l *LeasedIDs) prefetch() {
	l.mu.Lock()
	if l.spare == nil {
		l.startLease()
	}
	l.mu.Unlock()
}

func (l *LeasedIDs) nextSlow() (int64, error) {
	deadline := time.Now().Add(l.o.Wait)
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return 0, ErrClosed
		}
		s := l.current.Load()
		id := s.value.Add(s.delta) - s.delta
		if id <= s.last && id >= s.first {
			if id == s.loadNextAt && l.spare == nil {
				l.startLease()
			}
			l.mu.Unlock()
			return id, nil
		}
		if l.spare != nil {
			l.current.Store(l.spare)
			l.spare = nil
			continue
		}
		if l.failure != nil && !l.loading {
			err := l.failure
			l.failure = nil
			l.mu.Unlock()
			return 0, err
		}
		l.startLease()
		changed := l.changed
		l.mu.Unlock()
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("%w for %s within %v", ErrLeaseNotReady, l.key, l.o.Wait)
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		}
		timer.Stop()
		l.mu.Lock()
	}
}

// startLease is called with mu held.
func (l *LeasedIDs) startLease() {
	if l.loading || l.closed {
		return
	}
	l.loading = true
	now := time.Now()
	size := l.o.MinSize
	if !l.lastAt.IsZero() {
		least := l.o.MinSize
		if least == 0 {
			least = l.baseSize
		}
		size = nextStep(l.size, now.Sub(l.lastAt), least, l.o.MaxSize, l.o.TargetSegment)
	}
	go l.lease(size, now)
}

// nextStep is Leaf's adaptive step: a segment used up faster than target
// doubles the next, one that lasted more than twice as long halves it; always
// within [least, most].
func nextStep(previous int, since time.Duration, least, most int, target time.Duration) int {
	step := previous
	if since < target {
		step = previous * 2
	} else if since >= 2*target {
		step = previous / 2
	}
	if most < least {
		most = least
	}
	if step < least {
		step = least
	}
	if step > most {
		step = most
	}
	return step
}

// leaseCapped: the adaptive size doubles while segments go fast, but an entity
// leases no more than its maxSizePerSecond at once (400 above it), a limit the
// client is not told. A size refused as invalid once a smaller one was granted
// caps the sizes at the largest granted and is asked again at that size at
// once: a default trend entity (5,000 a second) leases 4,000 ids at a time
// instead of failing at its first 8,000.
func (l *LeasedIDs) leaseCapped(size int) (leaseAnswer, error) {
	if l.cap > 0 && size > l.cap {
		size = l.cap
	}
	a, err := l.fetch(size)
	if err != nil && errors.Is(err, ErrInvalidRequest) && size > 0 && l.granted > 0 && size > l.granted {
		l.cap = l.granted
		a, err = l.fetch(l.granted)
	}
	if err == nil && int(a.Count) > l.granted {
		l.granted = int(a.Count)
	}
	return a, err
}

func (l *LeasedIDs) lease(size int, startedAt time.Time) {
	a, err := l.leaseCapped(size)
	var seg *segment
	if err == nil {
		seg, err = l.toSegment(a)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loading = false
	if err != nil {
		l.failure = err
	} else {
		l.size = int(a.Count)
		if l.baseSize == 0 {
			l.baseSize = l.size
		}
		l.lastAt = startedAt
		l.leases++
		l.failure = nil
		if !l.closed {
			l.spare = seg
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *LeasedIDs) toSegment(a leaseAnswer) (*segment, error) {
	first, err1 := decimal(a.First)
	last, err2 := decimal(a.Last)
	if err1 != nil || err2 != nil || a.Count < 1 || a.Delta < 1 || a.Count > math.MaxInt32 || last-first != (a.Count-1)*a.Delta {
		return nil, fmt.Errorf("idpool: the lease of %s came back malformed: %+v", l.key, a)
	}
	loadAt := int64(math.Ceil(float64(a.Count)*l.o.PrefetchAt)) - 1
	if loadAt < 0 {
		loadAt = 0
	}
	s := &segment{first: first, last: last, delta: a.Delta, loadNextAt: first + loadAt*a.Delta}
	s.value.Store(first)
	return s, nil
}
