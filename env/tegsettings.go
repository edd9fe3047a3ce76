package env

import (
	"fmt"
	"strconv"
	"strings"
)

// TEGSetting is one "name=value" assignment to a TEG parameter, by the
// names TEGConfig.Set accepts.
type TEGSetting struct {
	Name  string
	Value float64
}

// TEGSettings are assignments applied in order over a base configuration
// (a scheduler's governor), so that one list serves schedulers whose
// defaults differ.
type TEGSettings []TEGSetting

// ParseTEGSettings reads "name=value,name2=value2". Values are numbers;
// switches (safety, moves, controller, tokens, contention) also take on
// and off. An unknown name or a value the parameter cannot take is an
// error that lists the known names.
func ParseTEGSettings(s string) (TEGSettings, error) {
	var out TEGSettings
	var probe TEGConfig
	for kv := range strings.SplitSeq(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=value (names: %s)", kv, strings.Join(TEGParamNames(), ", "))
		}
		v, err := strconv.ParseFloat(val, 64)
		if _, sw := probe.switches()[name]; sw && err != nil {
			var on bool
			if on, err = ParseOnOff(val); on {
				v = 1
			}
		}
		if err != nil {
			if err := probe.Set(name, 0); err != nil { // an unknown name says so, not "want a number"
				return nil, err
			}
			if _, sw := probe.switches()[name]; sw {
				return nil, fmt.Errorf("%s=%s: want on or off", name, val)
			}
			return nil, fmt.Errorf("%s=%s: want a number", name, val)
		}
		if err := probe.Set(name, v); err != nil {
			return nil, err
		}
		out = append(out, TEGSetting{name, v})
	}
	return out, nil
}

// Apply sets each assignment on t, in order.
func (s TEGSettings) Apply(t *TEGConfig) error {
	for _, kv := range s {
		if err := t.Set(kv.Name, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// String formats s as ParseTEGSettings reads it.
func (s TEGSettings) String() string {
	parts := make([]string, len(s))
	for i, kv := range s {
		parts[i] = kv.Name + "=" + strconv.FormatFloat(kv.Value, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
