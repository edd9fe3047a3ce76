package env

import (
	"strings"
	"testing"
)

func TestParseTEGSettings(t *testing.T) {
	s, err := ParseTEGSettings("temperature=0.1, moves=off,place-candidates=4,controller=1")
	if err != nil {
		t.Fatal(err)
	}
	c := GovernorTEG("langevin")
	if err := s.Apply(&c); err != nil {
		t.Fatal(err)
	}
	if c.Gamma0 != 0.1 || c.Moves || c.PlaceCandidates != 4 || !c.Controller {
		t.Fatalf("applied %v: got %+v", s, c)
	}
	if got := s.String(); got != "temperature=0.1,moves=0,place-candidates=4,controller=1" {
		t.Errorf("String = %q", got)
	}
	for in, want := range map[string]string{
		"tempreature=1":        "unknown TEG parameter",
		"temperature=x":        "want a number",
		"place-candidates=2.5": "wants an integer",
		"moves=maybe":          "want on or off",
		"safty=off":            "unknown TEG parameter",
		"temperature":          "want name=value",
	} {
		_, err := ParseTEGSettings(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
	if _, err := ParseTEGSettings("nope=1"); err == nil || !strings.Contains(err.Error(), "w-frag") {
		t.Errorf("unknown name's error should list the names: %v", err)
	}
}
