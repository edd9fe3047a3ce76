package transport

// The small interfaces the rl package programs against. Both the NATS
// transport (Actor, Learner) and the in-process channels (ChanActor,
// ChanLearner) implement them, so one run can compare the two.

// SegmentSink takes an actor's trajectory segments. PublishSegment does not
// keep payload: the caller may reuse it on return.
type SegmentSink interface {
	PublishSegment(version uint64, payload []byte) error
}

// ParamsSource gives an actor the newest parameters it has received, without
// blocking: actors poll it between segments so that they never stop. The
// payload is shared: read it, never modify it.
type ParamsSource interface {
	LatestParams() (version uint64, payload []byte, ok bool)
}

// StatsSink takes an actor's statistics (JSON).
type StatsSink interface {
	PublishStats(payload []byte) error
}

// ActorTransport is everything an actor needs.
type ActorTransport interface {
	SegmentSink
	ParamsSource
	StatsSink
	Stats() ActorStats
	Close() error
}

// SegmentSource delivers valid segment frames to the learner. SetVersion
// sets the learner's current policy version, against which stale segments
// are dropped.
type SegmentSource interface {
	Segments() <-chan Frame
	SetVersion(v uint64)
}

// ParamsSink broadcasts versioned parameters to the actors. It does not keep
// payload.
type ParamsSink interface {
	PublishParams(version uint64, payload []byte) error
}

// LearnerTransport is everything a learner needs.
type LearnerTransport interface {
	SegmentSource
	ParamsSink
	Stats() LearnerStats
	Close() error
}

var (
	_ ActorTransport   = (*Actor)(nil)
	_ ActorTransport   = (*ChanActor)(nil)
	_ LearnerTransport = (*Learner)(nil)
	_ LearnerTransport = (*ChanLearner)(nil)
)

// LearnerStats are a learner's counters (a snapshot). Every message on the
// segment subject is either delivered or counted in exactly one drop
// counter: Received = Delivered + DecodeErrors + BadChecksum + WrongRun +
// WrongKind + Stale + QueueOverflow (+ those arriving after Close).
type LearnerStats struct {
	// Version is the current policy version (SetVersion, PublishParams).
	Version        uint64 `json:"version"`
	Received       uint64 `json:"received"`
	Delivered      uint64 `json:"delivered"`
	DeliveredBytes uint64 `json:"delivered_bytes"`
	// DecodeErrors are undecodable messages other than checksum failures.
	DecodeErrors uint64 `json:"decode_errors"`
	BadChecksum  uint64 `json:"bad_checksum"`
	WrongRun     uint64 `json:"wrong_run"`
	// WrongKind are valid frames of another kind than segment.
	WrongKind uint64 `json:"wrong_kind"`
	// Stale are segments older than the lag bound.
	Stale         uint64 `json:"stale"`
	QueueOverflow uint64 `json:"queue_overflow"`
	// LostSegments is the sum of the per-actor sequence gaps: segments an
	// actor published that never arrived (or arrived out of order).
	LostSegments uint64 `json:"lost_segments"`
	// SeqResets counts segments whose sequence number was not above the
	// actor's last one: an actor restarted, or a duplicate.
	SeqResets uint64 `json:"seq_resets"`
	// Actors is the number of distinct actor ids seen.
	Actors        int    `json:"actors"`
	StatsReceived uint64 `json:"stats_received"`
	StatsDropped  uint64 `json:"stats_dropped"`

	ParamsPublished uint64 `json:"params_published"`
	// ParamsViaObjectStore counts the parameter sets too large for one
	// message, sent as an object plus a pointer frame.
	ParamsViaObjectStore uint64 `json:"params_via_object_store"`
	ParamsBytes          uint64 `json:"params_bytes"`
	ParamsErrors         uint64 `json:"params_errors"`
	// LatestErrors counts broadcasts that went out but could not be stored
	// as the latest version for actors that join later (NATS only).
	LatestErrors uint64 `json:"latest_errors"`
	// ParamsSigned counts the broadcasts signed (LearnerConfig.SigningKey;
	// NATS only).
	ParamsSigned uint64 `json:"params_signed"`

	// Conn are the connection's counters (zero over channels).
	Conn ConnStats `json:"conn"`
}

// ActorStats are an actor's counters (a snapshot).
type ActorStats struct {
	Actor             uint32 `json:"actor"`
	SegmentsPublished uint64 `json:"segments_published"`
	SegmentBytes      uint64 `json:"segment_bytes"`
	PublishErrors     uint64 `json:"publish_errors"`
	// ParamsVersion is the version LatestParams returns (0 with none).
	ParamsVersion uint64 `json:"params_version"`
	// ParamsReceived counts newer parameter sets taken.
	ParamsReceived uint64 `json:"params_received"`
	// ParamsFetched counts the parameter sets fetched from JetStream (object
	// store for pointers, key-value for the latest).
	ParamsFetched uint64 `json:"params_fetched"`
	// ParamsIgnored are parameter messages not newer than those held.
	ParamsIgnored uint64 `json:"params_ignored"`
	// ParamsErrors are undecodable or foreign parameter messages and failed
	// or corrupt fetches.
	ParamsErrors uint64 `json:"params_errors"`
	// ParamsUnsigned are parameter messages without a signature, dropped
	// because the actor holds a trusted key (ActorConfig.TrustKey).
	ParamsUnsigned uint64 `json:"params_unsigned"`
	// ParamsBadSignature are parameter messages whose signature does not
	// verify with the trusted key (tampered, replayed under another
	// version or run, or signed by another key), dropped.
	ParamsBadSignature uint64    `json:"params_bad_signature"`
	Conn               ConnStats `json:"conn"`
}
