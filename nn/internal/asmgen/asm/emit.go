// Package asm writes nn/sgemm_amd64.s: the kernels' unrolled register
// blocks are loops here, their comments and one-off instructions text.
package asm

import (
	"fmt"
	"strings"
)

type emitter struct{ b strings.Builder }

// t writes assembly text as it is.
func (e *emitter) t(s string) { e.b.WriteString(s) }

// i writes one instruction.
func (e *emitter) i(op string, args ...string) {
	e.b.WriteString("\t" + op + " " + strings.Join(args, ", ") + "\n")
}

// ic writes one instruction with a trailing comment.
func (e *emitter) ic(comment, op string, args ...string) {
	e.b.WriteString("\t" + op + " " + strings.Join(args, ", ") + " // " + comment + "\n")
}

func (e *emitter) label(l string) { e.b.WriteString(l + ":\n") }

// zero clears each register with op r, r, r.
func (e *emitter) zero(op string, regs ...string) {
	for _, r := range regs {
		e.i(op, r, r, r)
	}
}

// ld writes n loads op off(base), reg, the offsets stride apart.
func (e *emitter) ld(op string, n, stride int, base string, reg func(int) string) {
	for j := range n {
		e.i(op, at(j*stride, base), reg(j))
	}
}

// st writes n stores op reg, off(base), the offsets stride apart.
func (e *emitter) st(op string, n, stride int, reg func(int) string, base string) {
	for j := range n {
		e.i(op, reg(j), at(j*stride, base))
	}
}

// y, z and k name vector and mask registers.
func y(n int) string { return fmt.Sprintf("Y%d", n) }
func z(n int) string { return fmt.Sprintf("Z%d", n) }
func k(n int) string { return fmt.Sprintf("K%d", n) }

// ys and zs are register r0+i, for ld and st.
func ys(r0 int) func(int) string { return func(i int) string { return y(r0 + i) } }
func zs(r0 int) func(int) string { return func(i int) string { return z(r0 + i) } }

// rng lists registers first, first+1, … of a name ("Y", "Z").
func rng(name string, first, n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("%s%d", name, first+i)
	}
	return r
}

// at is a memory operand with its offset always written, "0(SI)".
func at(off int, base string) string { return fmt.Sprintf("%d%s", off, base) }

// at0 is one whose zero offset is left out, "(SI)".
func at0(off int, base string) string {
	if off == 0 {
		return base
	}
	return at(off, base)
}

// imm is an immediate operand.
func imm(v int) string { return fmt.Sprintf("$%d", v) }

// Generate returns the text of sgemm_amd64.s.
func Generate() []byte {
	var e emitter
	kernels(&e)
	return []byte(e.b.String())
}

// loop starts a loop at label that runs while CX ≥ n, leaving for out.
func (e *emitter) loop(label string, n int, out string) {
	e.label(label)
	e.i("CMPQ", "CX", imm(n))
	e.i("JLT", out)
}

// adv steps each pointer by bytes.
func (e *emitter) adv(bytes int, ptrs ...string) {
	for _, p := range ptrs {
		e.i("ADDQ", imm(bytes), p)
	}
}

// next ends loop's round: the pointers stepped by bytes, n counted off CX.
func (e *emitter) next(loop string, n, bytes int, ptrs ...string) {
	e.adv(bytes, ptrs...)
	e.i("SUBQ", imm(n), "CX")
	e.i("JMP", loop)
}

// ret is a kernel's exit at label.
func (e *emitter) ret(label string) {
	e.label(label)
	e.t("\tVZEROUPPER\n\tRET\n")
}

// args loads arguments: each "name+off reg" a MOVQ name+off(FP), reg.
func (e *emitter) args(specs ...string) {
	for _, s := range specs {
		f := strings.Fields(s)
		e.i("MOVQ", f[0]+"(FP)", f[1])
	}
}

// ld2 and st2 are ld and st with the operands written by a, 32 bytes
// apart.
func (e *emitter) ld2(op string, n int, a func(int, string) string, base string, reg func(int) string) {
	for j := range n {
		e.i(op, a(32*j, base), reg(j))
	}
}

func (e *emitter) st2(op string, n int, a func(int, string) string, reg func(int) string, base string) {
	for j := range n {
		e.i(op, reg(j), a(32*j, base))
	}
}

// add adds n vectors at base, 32 bytes apart, into Y0, Y1, ….
func (e *emitter) add(n int, a func(int, string) string, base string) {
	for j := range n {
		e.i("VADDPS", a(32*j, base), y(j), y(j))
	}
}

// lanes8 is a kernel's loop over eight lanes at a time: body, the
// pointers stepped 32 bytes, then the exit at done.
func (e *emitter) lanes8(loop, done, body string, ptrs ...string) {
	e.loop(loop, 8, done)
	e.t(body)
	e.next(loop, 8, 32, ptrs...)
	e.ret(done)
}

// count is a loop at label over i from its value up to n, leaving for
// out: body, then i incremented.
func (e *emitter) count(label, i, n, out string, body func()) {
	e.label(label)
	e.i("CMPQ", i, n)
	e.i("JGE", out)
	body()
	e.i("INCQ", i)
	e.i("JMP", label)
}
