package datasets

import (
	"fmt"
	"strings"
)

// ConvertSpec converts the trace that spec names, as tegrl dataset convert
// takes it: alibaba-gpu[:DIR], alibaba-2018:DIR or alibaba-batch[:FILE]
// (no DIR or FILE: the bundled copy), into out.
func ConvertSpec(spec, out string, opt ConvertOptions) (Converted, error) {
	src, path, hasPath := strings.Cut(spec, ":")
	if hasPath && path == "" || src == "alibaba-2018" && path == "" {
		return Converted{}, fmt.Errorf("--from %q: want alibaba-gpu[:DIR], alibaba-2018:DIR or alibaba-batch[:FILE]", spec)
	}
	switch src {
	case "alibaba-gpu":
		return ConvertAlibabaGPU(path, out, opt)
	case "alibaba-2018":
		return ConvertAlibaba2018(path, out, opt)
	case "alibaba-batch":
		return ConvertAlibabaBatch(path, out, opt)
	}
	return Converted{}, fmt.Errorf("--from %q: unknown source %q (want alibaba-gpu, alibaba-2018 or alibaba-batch)", spec, src)
}
