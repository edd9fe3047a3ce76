package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// The JSON API's request and response bodies. Keys are snake_case with
// units in the name; they are stable (added, never renamed).

// MachineJSON describes a machine in a full state update.
type MachineJSON struct {
	Name     string `json:"name"`
	CPUMilli int64  `json:"cpu_milli"`
	MemMiB   int64  `json:"mem_mib"`
	GPUs     int    `json:"gpus,omitempty"`
	GPUModel string `json:"gpu_model,omitempty"`
	// Rack groups machines under one switch and power budget; empty puts
	// the machine in default racks of 20 in order.
	Rack  string  `json:"rack,omitempty"`
	IdleW float64 `json:"idle_w,omitempty"`
	PeakW float64 `json:"peak_w,omitempty"`
	// Up defaults to true.
	Up *bool `json:"up,omitempty"`
}

// RackJSON sets a rack's properties in a full state update.
type RackJSON struct {
	// Name is a rack that machines name.
	Name string `json:"name"`
	// PowerBudgetW is the rack's power cap in watts (its PDU budget),
	// which the safety layer keeps the rack's estimated power under.
	PowerBudgetW *float64 `json:"power_budget_w,omitempty"`
	// UplinkGbps is the top-of-rack switch's uplink bandwidth.
	UplinkGbps *float64 `json:"uplink_gbps,omitempty"`
}

// JobJSON describes a job: a pending one to decide, or one that started.
type JobJSON struct {
	Name string `json:"name,omitempty"`
	// Kind is batch (default), training or service.
	Kind string `json:"kind,omitempty"`
	// QoS is BE, Burstable (default), Guaranteed or LS.
	QoS      string `json:"qos,omitempty"`
	CPUMilli int64  `json:"cpu_milli"`
	MemMiB   int64  `json:"mem_mib"`
	GPUs     int    `json:"gpus,omitempty"`
	// GPUMilli is the per-GPU demand: below 1000 with one GPU is a share
	// of one GPU; default 1000 with GPUs.
	GPUMilli  int      `json:"gpu_milli,omitempty"`
	GPUModels []string `json:"gpu_models,omitempty"`
	// DurationS is the expected work in seconds (default 3600).
	DurationS   *float64 `json:"duration_s,omitempty"`
	DeadlineS   float64  `json:"deadline_s,omitempty"`
	LatencySLOS float64  `json:"latency_slo_s,omitempty"`
	// Service names the service a replica belongs to.
	Service    string   `json:"service,omitempty"`
	Tenant     string   `json:"tenant,omitempty"`
	Migratable bool     `json:"migratable,omitempty"`
	NetGbps    *float64 `json:"net_gbps,omitempty"`
	// WaitS is how long ago the job was submitted (default 0).
	WaitS float64 `json:"wait_s,omitempty"`
}

// UsageJSON is a running job's measured usage, as fractions of its CPU
// and memory requests.
type UsageJSON struct {
	Key      string  `json:"key,omitempty"`
	CPURatio float64 `json:"cpu_ratio"`
	MemRatio float64 `json:"mem_ratio"`
}

// StartedJSON reports a job that runs on a machine.
type StartedJSON struct {
	Key     string `json:"key"`
	Machine string `json:"machine"`
	// GPU picks the GPU of a share job (default: best fit).
	GPU   *int       `json:"gpu,omitempty"`
	Job   JobJSON    `json:"job"`
	Usage *UsageJSON `json:"usage,omitempty"`
}

// MachineStatusJSON reports a machine going down or up.
type MachineStatusJSON struct {
	Name string `json:"name"`
	Up   bool   `json:"up"`
}

// QueueJSON summarises the cluster's pending jobs.
type QueueJSON struct {
	Jobs      int     `json:"jobs"`
	CPUMilli  int64   `json:"cpu_milli"`
	GPUMilli  int64   `json:"gpu_milli"`
	MeanWaitS float64 `json:"mean_wait_s"`
}

// StateRequest is the body of POST /v1/state. With Machines, it defines
// the cluster anew (every running job is forgotten; Started re-reports
// them); otherwise it is a delta on the current model. The parts apply in
// the order: time, machines, machine status, stopped, started, usage,
// queue.
type StateRequest struct {
	// TimeS is the cluster's clock in seconds (request clock only): the
	// model advances whole ticks up to it. It never moves back.
	TimeS    *float64      `json:"time_s,omitempty"`
	Machines []MachineJSON `json:"machines,omitempty"`
	// Racks sets the power budget and uplink of racks the machines name
	// (only with Machines; unlisted racks keep the defaults: 0.8 of their
	// machines' peak power, the default uplink).
	Racks         []RackJSON          `json:"racks,omitempty"`
	MachineStatus []MachineStatusJSON `json:"machine_status,omitempty"`
	Stopped       []string            `json:"stopped,omitempty"`
	Started       []StartedJSON       `json:"started,omitempty"`
	Usage         []UsageJSON         `json:"usage,omitempty"`
	Queue         *QueueJSON          `json:"queue,omitempty"`
}

// Rejection is a part of a state update that could not be applied.
type Rejection struct {
	Field string `json:"field"`
	Key   string `json:"key"`
	Error string `json:"error"`
}

// StateResponse answers POST /v1/state.
type StateResponse struct {
	ModelTimeS  float64     `json:"model_time_s"`
	Ticks       int         `json:"ticks"`
	Machines    int         `json:"machines"`
	MachinesUp  int         `json:"machines_up"`
	RunningJobs int         `json:"running_jobs"`
	Started     int         `json:"started"`
	Stopped     int         `json:"stopped"`
	Rebuilt     bool        `json:"cluster_rebuilt"`
	Rejected    []Rejection `json:"rejected"`
}

// DecideRequest is the body of POST /v1/decide.
type DecideRequest struct {
	// Key identifies the job (e.g. namespace/name): A/B routing is sticky
	// per key. Empty: the job's name.
	Key string  `json:"key,omitempty"`
	Job JobJSON `json:"job"`
}

// ActionJSON is a decision's action.
type ActionJSON struct {
	// Machine is the machine's name; null means wait.
	Machine      *string `json:"machine"`
	MachineIndex int     `json:"machine_index"` // -1: wait
	GPU          int     `json:"gpu"`           // share jobs; -1: best fit
	ReplicaDelta int     `json:"replica_delta"`
	Affinity     float32 `json:"affinity"`
	// Damping is the global damping the policy sets; null leaves the
	// controller's.
	Damping *float32 `json:"damping"`
}

// DecideResponse answers POST /v1/decide.
type DecideResponse struct {
	DecisionID    string     `json:"decision_id"`
	Arm           string     `json:"arm"`
	PolicyVersion string     `json:"policy_version"`
	Action        ActionJSON `json:"action"`
	// Verdict: placed, waited, projected (the safety layer moved it) or
	// invalid (the scheduler named a machine the job does not fit).
	Verdict    string  `json:"verdict"`
	ModelTimeS float64 `json:"model_time_s"`
}

// OutcomeRequest is the body of POST /v1/outcome: what became of a
// decision's job. Give at least one measurement.
type OutcomeRequest struct {
	DecisionID  string   `json:"decision_id"`
	Reward      *float64 `json:"reward,omitempty"`
	Success     *bool    `json:"success,omitempty"`
	SLAViolated *bool    `json:"sla_violated,omitempty"`
	JCTS        *float64 `json:"jct_s,omitempty"`
	WaitS       *float64 `json:"wait_s,omitempty"`
}

// bodyError marks a request body the service cannot read: 400.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return e.msg }

// bodyTimeoutError is a body that did not arrive before the request's
// deadline: 408.
type bodyTimeoutError struct{}

func (e *bodyTimeoutError) Error() string { return "request body not received before the deadline" }

// decodeStrict decodes one JSON value from r into v: unknown fields,
// trailing data and type mismatches are errors that name the field.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &bodyError{"trailing data after the JSON value"}
	}
	return nil
}

// decodeLenient decodes one JSON value, ignoring unknown fields: for
// Kubernetes objects, which carry many fields tegrl does not read.
func decodeLenient(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &bodyError{"trailing data after the JSON value"}
	}
	return nil
}

// jsonError rewrites encoding/json's errors into messages that name the
// field (or the byte offset of a syntax error).
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err // the handler answers 413
	case isTimeout(err):
		return &bodyTimeoutError{}
	case errors.Is(err, io.EOF):
		return &bodyError{"empty body: want a JSON object"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &bodyError{"malformed JSON: unexpected end of the body"}
	case errors.As(err, &syn):
		return &bodyError{fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, syn)}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return &bodyError{fmt.Sprintf("field %s: %s is not a valid %s", field, typ.Value, typ.Type)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &bodyError{"unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")}
	}
	return &bodyError{"malformed JSON: " + err.Error()}
}

// encodeJSON writes v as one line of JSON.
func encodeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// finite32 returns a pointer to x, or nil when x is NaN or infinite (JSON
// has no NaN).
func finite32(x float32) *float32 {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return nil
	}
	return &x
}
