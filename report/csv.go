package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// WriteStructCSV writes one CSV row per element of rows, a slice of
// structs, with the JSON names of their fields as the header; the fields
// of embedded structs are inlined and floats written with 8 significant
// digits (a training run's train_log.csv).
func WriteStructCSV[T any](path string, rows []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	err = w.Write(csvNames(reflect.TypeFor[T]()))
	for _, r := range rows {
		if err != nil {
			break
		}
		err = w.Write(csvValues(reflect.ValueOf(r)))
	}
	if err == nil {
		w.Flush()
		err = w.Error()
	}
	if err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// csvNames is the header of WriteStructCSV.
func csvNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Anonymous {
			out = append(out, csvNames(t.Field(i).Type)...)
			continue
		}
		out = append(out, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

// csvValues is one row of WriteStructCSV.
func csvValues(v reflect.Value) []string {
	var out []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		fv := v.Field(i)
		if t.Field(i).Anonymous {
			out = append(out, csvValues(fv)...)
			continue
		}
		switch fv.Kind() {
		case reflect.Float64:
			out = append(out, strconv.FormatFloat(fv.Float(), 'g', 8, 64))
		default:
			out = append(out, fmt.Sprint(fv.Interface()))
		}
	}
	return out
}

// WriteJSONFile writes v as indented JSON and a newline to path (a run's
// summary.json) and returns the JSON without the newline.
func WriteJSONFile(path string, v any) ([]byte, error) {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return js, os.WriteFile(path, append(js, '\n'), 0o644)
}
