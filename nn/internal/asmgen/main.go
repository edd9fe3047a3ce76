// Command asmgen writes nn/sgemm_amd64.s (go generate ./nn).
package main

import (
	"flag"
	"log"
	"os"

	"github.com/tegrl/tegrl/nn/internal/asmgen/asm"
)

func main() {
	out := flag.String("out", "sgemm_amd64.s", "the file to write")
	flag.Parse()
	if err := os.WriteFile(*out, asm.Generate(), 0o644); err != nil {
		log.Fatal(err)
	}
}
