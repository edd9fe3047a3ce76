package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Every API request runs under a deadline (Config.RequestTimeout) in a
// goroutine of its own that writes into a buffer; the answer is the
// handler's, or a 503 when the deadline passes first. A handler that
// changes the service claims its request with commit just before the
// change: after a successful claim the deadline no longer answers for it,
// and after a 503 no claim succeeds, so a request answered 503 never
// changes anything, and one answered 200 changed what it says.

// Request states.
const (
	reqRunning   int32 = iota
	reqCommitted       // the handler claimed it: its answer goes out
	reqAbandoned       // the deadline passed first: 503, nothing commits
)

type reqStateKey struct{}

// reqState is one request's claim.
type reqState struct{ st atomic.Int32 }

// reasonCancelled is the refusal reason of a policy candidate that passed
// validation after its upload had been answered 503: it is not swapped in.
const reasonCancelled = "cancelled"

// errCancelled is a request whose deadline passed (or whose client left)
// before it changed anything: 503.
var errCancelled = &notReadyError{"request cancelled before it applied: deadline passed or client gone"}

// commit reports whether the request of ctx is still wanted and, if so,
// claims it: from then on its handler's answer is sent whatever the
// deadline. Call it once, under the lock that guards the change, right
// before the change. Outside the HTTP handlers (a direct call of the Go
// API), it reports whether ctx is still live.
func commit(ctx context.Context) bool {
	rs, ok := ctx.Value(reqStateKey{}).(*reqState)
	if ctx.Err() != nil {
		if ok {
			rs.st.CompareAndSwap(reqRunning, reqAbandoned)
		}
		return false
	}
	if !ok {
		return true
	}
	return rs.st.CompareAndSwap(reqRunning, reqCommitted)
}

// bufWriter buffers a handler's answer until the request is decided.
type bufWriter struct {
	hdr  http.Header
	code int
	body bytes.Buffer
}

func (b *bufWriter) Header() http.Header { return b.hdr }

func (b *bufWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

// reset forgets what the handler wrote (a panic's half answer).
func (b *bufWriter) reset() {
	b.hdr = http.Header{}
	b.code = 0
	b.body.Reset()
}

func (b *bufWriter) copyTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range b.hdr {
		h[k] = v
	}
	if b.code == 0 {
		b.code = http.StatusOK
	}
	w.WriteHeader(b.code)
	w.Write(b.body.Bytes())
}

// bounded runs h under the request deadline with the claim protocol
// above. A panic in h (a scheduler's, say) answers 500 for that request
// alone; the locks are released by their defers and the service goes on.
// Reading the body has the same deadline, so a client that sends its body
// slowly is answered 503 at the deadline and its connection closed.
func (s *Service) bounded(name string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		deadline := time.Now().Add(s.cfg.RequestTimeout)
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		defer cancel()
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(deadline) // not every ResponseWriter supports it (httptest's recorder)
		rs := &reqState{}
		ctx = context.WithValue(ctx, reqStateKey{}, rs)
		bw := &bufWriter{hdr: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					s.met.panics.WithLabelValues(name).Inc()
					s.log.Error("panic answering a request; answered 500, the service goes on", "handler", name, "panic", fmt.Sprint(p),
						"stack", string(debug.Stack()))
					bw.reset()
					writeJSON(bw, http.StatusInternalServerError, apiError{Error: fmt.Sprintf("internal error: %v", p)})
				}
			}()
			h(bw, r.WithContext(ctx))
		}()
		select {
		case <-done:
		case <-ctx.Done():
			if rs.st.CompareAndSwap(reqRunning, reqAbandoned) {
				// Stop reading a slow body now, and close the connection
				// rather than drain what is left of it.
				_ = rc.SetReadDeadline(time.Now())
				w.Header().Set("Connection", "close")
				writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "request timed out", Reason: "timeout"})
				return
			}
			<-done // claimed: its answer stands
		}
		bw.copyTo(w)
	}
}

// isTimeout reports whether err is a deadline that ran out while reading
// a body.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}
