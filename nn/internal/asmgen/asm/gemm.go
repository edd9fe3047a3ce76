package asm

import "fmt"

// gemm describes one of the sgemm micro-kernels: rows of a times panels
// 16-column panels of b, the tile in registers v0, v1, … (row r, panel p
// in register 2r+p), a row of b in bregs, the broadcast elements of a in
// bcast, alternating by row.
type gemm struct {
	v        string // "Y" or "Z"
	zero     string // the clearing instruction
	width    int    // bytes of a vector
	rows     int
	panels   int
	b        []string // where the panels' row is read
	bregs    []int
	bcast    [2]int
	prefetch bool   // fetch the tile of c before the loop
	pre      string // text between the clearing and the loop
	head     string // the loop's first instructions
	step     string // b's step, after a's
	walk     int    // the rows the pointers to add and c step over
	loop     string // labels
	store    string
	stores   string
}

func (g *gemm) reg(n int) string     { return fmt.Sprintf("%s%d", g.v, n) }
func (g *gemm) tile(r, p int) string { return g.reg(2*r + p) }

// aBase are the registers that point at rows 0, 3, 6 and 9 of a.
var aBase = []string{"SI", "R11", "R13", "R14"}

// arow is the operand of row r of a: three rows per base register, the
// others lda (R10) and 2·lda past it.
func arow(r int) string {
	base := "(" + aBase[r/3] + ")"
	if r%3 == 0 {
		return base
	}
	return fmt.Sprintf("%s(R10*%d)", base, r%3)
}

func (g *gemm) emit(e *emitter) {
	if g.prefetch {
		for r := range g.rows {
			if r > 0 {
				e.i("ADDQ", "R8", "R9")
			}
			for p := range g.panels {
				e.i("PREFETCHT0", at0(p*g.width, "(R9)"))
			}
		}
	}
	for r := range g.rows {
		for p := range g.panels {
			e.zero(g.zero, g.tile(r, p))
		}
	}
	e.t(g.pre)

	// The sum: per step a row of b, then per row of a its element
	// broadcast and one fused multiply-add per panel.
	e.label(g.loop)
	e.t(g.head)
	for p := range g.panels {
		e.i("VMOVUPS", g.b[p], g.reg(g.bregs[p]))
	}
	for r := range g.rows {
		bc := g.reg(g.bcast[r%2])
		e.i("VBROADCASTSS", arow(r), bc)
		for p := range g.panels {
			e.i("VFMADD231PS", g.reg(g.bregs[p]), bc, g.tile(r, p))
		}
	}
	for _, base := range aBase[:(g.rows+2)/3] {
		e.i("ADDQ", "R12", base)
	}
	e.t(g.step)
	e.i("DECQ", "CX")
	e.i("JNZ", g.loop)
	e.t("\n")

	// The add, a row at a time.
	e.t("\tMOVQ add+56(FP), R9\n\tTESTQ R9, R9\n")
	e.i("JZ", g.store)
	e.t("\tMOVQ ldadd+64(FP), AX\n\tSHLQ $2, AX\n")
	for r := range g.walk {
		if r > 0 {
			e.i("ADDQ", "AX", "R9")
		}
		for p := range g.panels {
			if r < g.rows {
				e.i("VADDPS", at0(p*g.width, "(R9)"), g.tile(r, p), g.tile(r, p))
			}
		}
	}
	e.t("\n")

	// ReLU (the file's RELU comment), then the stores.
	e.label(g.store)
	e.t("\tMOVBLZX relu+72(FP), AX\n\tTESTQ AX, AX\n")
	e.i("JZ", g.stores)
	zr := g.reg(g.bcast[0])
	e.zero(g.zero, zr)
	for r := range g.rows {
		for p := range g.panels {
			t := g.tile(r, p)
			e.i("VMAXPS", t, zr, t)
			e.i("VADDPS", zr, t, t)
		}
	}
	e.t("\n")
	e.label(g.stores)
	for r := range g.walk {
		if r > 0 {
			e.i("ADDQ", "R8", "DX")
		}
		for p := range g.panels {
			if r < g.rows {
				e.i("VMOVUPS", g.tile(r, p), at0(p*g.width, "(DX)"))
			}
		}
	}
	e.t("\tVZEROUPPER\n\tRET\n")
}

func avx2Gemm() *gemm {
	return &gemm{v: "Y", zero: "VXORPS", width: 32, rows: 6, panels: 2,
		b: []string{"(DI)", "32(DI)"}, bregs: []int{12, 13}, bcast: [2]int{14, 15},
		pre: "\n", step: "\tADDQ $64, DI\n", walk: 6,
		loop: "loop", store: "store", stores: "stores"}
}

// zGemm is the AVX-512 kernels' shape: b's two panels at DI and BX.
func zGemm(rows int, sfx string) *gemm {
	g := &gemm{v: "Z", zero: "VPXORD", width: 64, rows: rows, panels: 2,
		b: []string{"(DI)", "(BX)"}, bregs: []int{12, 13}, bcast: [2]int{14, 15},
		pre: "\n", step: "\tADDQ AX, DI\n\tADDQ AX, BX\n", walk: rows,
		loop: "loopz" + sfx, store: "storez" + sfx, stores: "storez" + sfx + "s"}
	if rows == 12 {
		g.bregs, g.bcast = []int{24, 25}, [2]int{26, 27}
		g.prefetch = true
		g.head = "\tPREFETCHT0 (R15)\n\tADDQ $64, R15\n"
		g.pre = "\n\tMOVQ R10, R15\n\tIMULQ $12, R15\n\tADDQ SI, R15 // the next panel of A, one line per step\n"
	}
	return g
}
