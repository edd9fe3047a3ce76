// Package flagtag declares command-line flags from struct tags, so that a
// command's options are documented once, at the fields of the
// configuration struct that owns them.
//
// A field tagged `flag:"name"` becomes the flag --name; `usage:"..."` is
// its help and `default:"..."` its default, parsed as the flag would parse
// it (a field without one keeps its current value as the default). Struct
// fields without a flag tag, embedded or named, are walked for more flags.
// Supported kinds: string, bool, int, int32, int64, uint32, uint64,
// float32, float64, time.Duration and []string (comma-separated).
//
//	type Options struct {
//		Out   string `flag:"out" usage:"output directory"`
//		Steps int    `flag:"steps" default:"1000" usage:"decisions to learn from"`
//	}
//	flagtag.Bind(cmd.Flags(), &opts)
package flagtag

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

var durationType = reflect.TypeOf(time.Duration(0))

// Bind declares the flags of the struct v points to on fs. A tag that
// names an unsupported kind or a default that does not parse is a
// programming error and panics, as pflag does on a flag declared twice.
func Bind(fs *pflag.FlagSet, v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("flagtag: Bind needs a pointer to a struct, not %T", v))
	}
	bind(fs, rv.Elem())
}

func bind(fs *pflag.FlagSet, s reflect.Value) {
	t := s.Type()
	for i := 0; i < t.NumField(); i++ {
		sf, fv := t.Field(i), s.Field(i)
		name, ok := sf.Tag.Lookup("flag")
		if !ok {
			if fv.Kind() == reflect.Struct && (sf.IsExported() || sf.Anonymous) {
				bind(fs, fv)
			}
			continue
		}
		if def, ok := sf.Tag.Lookup("default"); ok {
			if err := set(fv, def); err != nil {
				panic(fmt.Sprintf("flagtag: --%s: default %q: %v", name, def, err))
			}
		}
		declare(fs, fv.Addr().Interface(), name, sf.Tag.Get("usage"))
	}
}

func declare(fs *pflag.FlagSet, p any, name, usage string) {
	switch p := p.(type) {
	case *string:
		fs.StringVar(p, name, *p, usage)
	case *bool:
		fs.BoolVar(p, name, *p, usage)
	case *int:
		fs.IntVar(p, name, *p, usage)
	case *int32:
		fs.Int32Var(p, name, *p, usage)
	case *int64:
		fs.Int64Var(p, name, *p, usage)
	case *uint32:
		fs.Uint32Var(p, name, *p, usage)
	case *uint64:
		fs.Uint64Var(p, name, *p, usage)
	case *float32:
		fs.Float32Var(p, name, *p, usage)
	case *float64:
		fs.Float64Var(p, name, *p, usage)
	case *time.Duration:
		fs.DurationVar(p, name, *p, usage)
	case *[]string:
		fs.StringSliceVar(p, name, *p, usage)
	default:
		panic(fmt.Sprintf("flagtag: --%s: unsupported type %T", name, p))
	}
}

// set parses s into the field v.
func set(v reflect.Value, s string) error {
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		v.SetInt(int64(d))
		return err
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		v.SetBool(b)
		return err
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, v.Type().Bits())
		v.SetInt(n)
		return err
	case reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, v.Type().Bits())
		v.SetUint(n)
		return err
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		v.SetFloat(f)
		return err
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported type %s", v.Type())
		}
		var parts []string
		if s != "" {
			parts = strings.Split(s, ",")
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}
