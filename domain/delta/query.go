package delta

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Limits of the changes route and of a registration's feed settings.
const (
	// DefaultPageLimit is a registration's page_limit when none is given.
	DefaultPageLimit = 100
	// MinLimit and MaxLimit bound ?limit= and page_limit.
	MinLimit = 1
	MaxLimit = 1000
	// DefaultLease is a claim's lease when lease_s is absent.
	DefaultLease = 120 * time.Second
	// MinLease and MaxLease bound lease_s. Below 10 s a window of 1,000
	// deltas cannot be applied and acknowledged over a real network, so it
	// would be delivered again and again; above an hour a consumer that
	// crashed holding a lease stalls the feed for longer than anyone waits.
	MinLease = 10 * time.Second
	MaxLease = time.Hour
)

// ErrInvalidParam is the sentinel under every ParamError.
var ErrInvalidParam = errors.New("invalid parameter")

// ParamError names the query parameter (or setting) that is wrong, so the
// HTTP layer answers 400 with that field.
type ParamError struct {
	Field  string
	Reason string
}

func (e *ParamError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidParam) true.
func (e *ParamError) Unwrap() error { return ErrInvalidParam }

func paramErr(field, format string, args ...any) error {
	return &ParamError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Settings are the feed settings of a registration.
type Settings struct {
	PageLimit        int           // default window size (page_limit)
	PurgeOnAck       bool          // delete deltas once acknowledged
	PurgeEntityState bool          // delete entity rows once acknowledged everywhere
	Lease            time.Duration // default lease (lease_s); not a wire field
}

// WithDefaults fills the zero fields.
func (s Settings) WithDefaults() Settings {
	if s.PageLimit == 0 {
		s.PageLimit = DefaultPageLimit
	}
	if s.Lease == 0 {
		s.Lease = DefaultLease
	}
	return s
}

// Validate checks s after WithDefaults.
func (s Settings) Validate() error {
	if s.PageLimit < MinLimit || s.PageLimit > MaxLimit {
		return paramErr("page_limit", "must be an integer from %d to %d", MinLimit, MaxLimit)
	}
	if s.Lease < MinLease || s.Lease > MaxLease {
		return paramErr("lease_s", "must be an integer from %d to %d", int(MinLease.Seconds()), int(MaxLease.Seconds()))
	}
	return nil
}

// Include is the row set a read returns.
type Include string

const (
	// Pending is the FIFO feed: unacknowledged rows that are not quarantined.
	Pending Include = "pending"
	// Acked is the acknowledged rows still kept (purge_on_ack off).
	Acked Include = "acked"
	// All is every row still stored, quarantined ones included.
	All Include = "all"
)

// Order is the cursor direction.
type Order string

const (
	// Asc walks ids forward from since (the consumer's direction).
	Asc Order = "asc"
	// Desc walks ids backward from before (browsing).
	Desc Order = "desc"
)

// ChangesQuery is the parsed query of GET /api/databases/{id}/changes.
type ChangesQuery struct {
	// Since: a read returns rows with id > Since. A claim ignores it and
	// starts after the acknowledged watermark, so a client's cursor that ran
	// ahead of a lost ack cannot skip deltas.
	Since   int64
	Before  int64 // desc only: rows with id < Before; 0 = no bound
	Claim   bool
	Limit   int
	Lease   time.Duration
	Include Include
	Order   Order
	Format  string // "json"
}

// ParseChangesQuery parses and checks the changes route's query against the
// registration's settings (zero fields take their defaults). An empty value
// counts as absent; a repeated parameter is an error. A claim walks the FIFO
// feed only: it takes neither order=desc, nor include other than pending,
// nor before. Parameters it does not know are ignored.
func ParseChangesQuery(v url.Values, s Settings) (ChangesQuery, error) {
	s = s.WithDefaults()
	q := ChangesQuery{Include: Pending, Order: Asc, Format: "json",
		// Settings are checked when saved; clamping keeps a bad row from
		// leaking an out-of-range default into a query.
		Limit: min(max(s.PageLimit, MinLimit), MaxLimit), Lease: min(max(s.Lease, MinLease), MaxLease)}
	var err error
	if q.Since, err = intParam(v, "since", 0, 0); err != nil {
		return ChangesQuery{}, err
	}
	if q.Before, err = intParam(v, "before", 1, 0); err != nil {
		return ChangesQuery{}, err
	}
	limit, err := intParam(v, "limit", MinLimit, MaxLimit)
	if err != nil {
		return ChangesQuery{}, err
	} else if limit != 0 {
		q.Limit = int(limit)
	}
	lease, err := intParam(v, "lease_s", int64(MinLease.Seconds()), int64(MaxLease.Seconds()))
	if err != nil {
		return ChangesQuery{}, err
	} else if lease != 0 {
		q.Lease = time.Duration(lease) * time.Second
	}
	if err := parseWords(v, &q); err != nil {
		return ChangesQuery{}, err
	}
	return q, q.check()
}

func parseWords(v url.Values, q *ChangesQuery) error {
	claim, err := single(v, "claim")
	if err != nil {
		return err
	}
	if claim != "" {
		if q.Claim, err = strconv.ParseBool(claim); err != nil {
			return paramErr("claim", "must be true or false")
		}
	}
	include, err := oneOf(v, "include", Pending, Acked, All)
	if err != nil {
		return err
	} else if include != "" {
		q.Include = include
	}
	order, err := oneOf(v, "order", Asc, Desc)
	if err != nil {
		return err
	} else if order != "" {
		q.Order = order
	}
	if _, err := oneOf(v, "format", "json"); err != nil {
		return err
	}
	return nil
}

func (q ChangesQuery) check() error {
	if q.Before != 0 && q.Order != Desc {
		return paramErr("before", "is a cursor of order=desc")
	}
	if q.Claim && q.Order != Asc {
		return paramErr("order", "a claim walks the feed in order asc")
	}
	if q.Claim && q.Include != Pending {
		return paramErr("include", "a claim takes only pending deltas")
	}
	return nil
}

// single returns the parameter's one value ("" when absent or empty).
func single(v url.Values, name string) (string, error) {
	vals := v[name]
	if len(vals) > 1 {
		return "", paramErr(name, "is given more than once")
	}
	if len(vals) == 0 {
		return "", nil
	}
	return vals[0], nil
}

// intParam parses a decimal integer in [min, max] (max 0: no upper bound);
// absent gives 0.
func intParam(v url.Values, name string, min, max int64) (int64, error) {
	s, err := single(v, name)
	if err != nil || s == "" {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && n >= min && (max == 0 || n <= max) {
		return n, nil
	}
	if max == 0 {
		return 0, paramErr(name, "must be an integer of at least %d", min)
	}
	return 0, paramErr(name, "must be an integer from %d to %d", min, max)
}

func oneOf[T ~string](v url.Values, name string, allowed ...T) (T, error) {
	s, err := single(v, name)
	if err != nil || s == "" {
		return "", err
	}
	for _, a := range allowed {
		if string(a) == s {
			return a, nil
		}
	}
	return "", paramErr(name, "must be one of %v", allowed)
}
