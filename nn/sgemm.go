package nn

import (
	"runtime"
	"sync"
)

// A packed float32 matrix product for the default (pure-Go) build on CPUs
// with AVX2 and FMA. gonum's Sgemm computes every output element as one SSE
// dot product (10-17 GFLOP/s here); this one is the classic GotoBLAS
// structure: B is packed into 16-column panels, and an assembly kernel keeps
// a 6×16 tile of C in twelve AVX registers while it walks the shared
// dimension, reading six rows of A in place (of a transposed A, six
// adjacent columns; a partial panel, or a transposed A with a wide leading
// dimension, is copied first). Packing absorbs the transposes, so every
// layout runs at about the same speed.
const (
	sgemmMR = 6   // rows of the register tile
	sgemmNR = 16  // columns of the register tile (two AVX registers)
	sgemmKC = 256 // depth of a packed block: a B panel of 16 KB stays in L1
)

// sgemmStrideMax is the widest leading dimension of a transposed A that
// the kernel reads in place. Each step of the shared dimension then
// touches a new cache line; up to 2 KB apart they stream well (weight
// gradients X^T·dY of 64-wide embeddings: 78 -> 100 GFLOP/s without the
// copy), while at 8 KB the lines of a 256-deep block fall in few L1 sets and
// evict each other (m=2048, k=128, n=256: 99 GFLOP/s packed, 77 in place).
const sgemmStrideMax = 512

// sgemmParallelMin is the smallest m·n·k for which sgemm splits the rows
// between goroutines, and sgemmParallelRows the fewest rows a goroutine
// takes: below them starting a goroutine and waking an idle core cost
// more than the split saves. With the earlier bound of 2^18 and any
// number of rows, on two cores (2026-12-01), the GNN encoder's forward
// pass at 1,200 machines (products of 1-8 M multiply-adds) took 3.5 ms
// against 2.4 ms unsplit, and a weight gradient 64×1200·1200×64 (64
// rows split in two, each half reading all of B) 82 µs against 50 µs;
// see docs/PERFORMANCE.md.
const (
	sgemmParallelMin  = 1 << 25
	sgemmParallelRows = 256
)

// sgemmWorkers is the number of goroutines an m×k·k×n product runs on.
func sgemmWorkers(m, n, k int) int {
	if m*n*k < sgemmParallelMin {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), m/sgemmParallelRows))
}

// sgemmScratch holds the packing buffers of one caller (a tape), reused
// from product to product so that a product allocates nothing.
type sgemmScratch struct {
	b       []float32  // the packed B block: one kc×16 panel per 16 columns
	workers []sgemmBuf // one per goroutine of a parallel product
}

// sgemmBuf holds one goroutine's buffers.
type sgemmBuf struct {
	a    []float32 // six rows of op(A), kc wide, where A cannot be read in place
	tile [sgemmMR * 2 * sgemmNR]float32
}

// useSgemm reports whether a float32 product of this shape goes to sgemm:
// below four rows the packing of B costs more than gonum's dot products
// (narrow or shallow products lose little to the padding of the tile).
func useSgemm(m, n, k int) bool {
	return haveSgemmKernel && m >= 4
}

// sgemm computes c = op(a)·op(b) + beta·c like [gemm] with alpha 1.
func (s *sgemmScratch) sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	s.sgemmBias(transA, transB, m, n, k, a, lda, b, ldb, beta, nil, false, c, ldc)
}

// sgemmBias is sgemm that also adds bias, an n-element row, to every row
// of c when bias is not nil (then beta must be 0), and then, if relu,
// replaces every element x of c by max(x, 0) (Go's max). The kernels add
// the bias to their sums as they would add c, so the result has the bits
// of a product with beta 1 onto rows filled with the bias, without that
// fill; the ReLU is applied as they store.
func (s *sgemmScratch) sgemmBias(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, bias []float32, relu bool, c []float32, ldc int) {
	if bias != nil && beta != 0 {
		panic("nn: sgemm with a bias and beta != 0")
	}
	if beta != 0 && beta != 1 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		beta = 1
	}
	workers := sgemmWorkers(m, n, k)
	if len(s.workers) < workers {
		s.workers = make([]sgemmBuf, workers)
	}
	panels := (n + sgemmNR - 1) / sgemmNR
	// The AVX-512 kernels read an untransposed B of whole 32-column pairs
	// of panels in place (a weight gradient's B is a whole layer's
	// gradient, whose copy cost as much as a fifth of the product), up to
	// sgemmStrideMax apart like A's columns.
	inPlace := haveSgemmZ && !transB && n%(2*sgemmNR) == 0 && ldb <= sgemmStrideMax
	for p0 := 0; p0 < k; p0 += sgemmKC {
		kb := min(sgemmKC, k-p0)
		bs := sgemmB{p: b[min(p0*ldb, len(b)):], ld: ldb}
		if inPlace {
			_ = b[(p0+kb-1)*ldb+n-1] // the kernels read this far
		} else {
			s.b = grow(s.b, panels*kb*sgemmNR)
			packB(s.b, transB, b, ldb, p0, kb, n)
			bs = sgemmB{p: s.b}
		}
		var add sgemmAdd // what the depth block's sums are added to
		switch {
		case beta == 1 || p0 > 0:
			add = sgemmAdd{base: c, ld: ldc}
		case bias != nil:
			add = sgemmAdd{base: bias}
		}
		add.relu = relu && p0+kb == k // on the last depth block's sums
		if workers == 1 {
			sgemmRows(&s.workers[0], bs, transA, a, lda, 0, m, m, p0, kb, n, c, ldc, add)
			continue
		}
		s.parallel(workers, bs, transA, a, lda, m, p0, kb, n, c, ldc, add)
	}
}

// sgemmB is the B of a depth block: packed panels (ld 0), or B's rows
// read in place, ld apart, from the block's first.
type sgemmB struct {
	p  []float32
	ld int
}

// at returns the kernels' pointer to the kb×32 block of columns from j
// (ld 0: two panels of kb×16).
func (bs sgemmB) at(j, kb int) *float32 {
	if bs.ld == 0 {
		return &bs.p[j*kb]
	}
	return &bs.p[j]
}

// parallel splits sgemmRows evenly by row panels between workers
// goroutines (the caller being one), which all read B.
func (s *sgemmScratch) parallel(workers int, bs sgemmB, transA bool, a []float32, lda, m, p0, kb, n int, c []float32, ldc int, add sgemmAdd) {
	var wg sync.WaitGroup
	rowPanels := (m + sgemmMR - 1) / sgemmMR
	for w := 1; w < workers; w++ {
		i0 := rowPanels * w / workers * sgemmMR
		i1 := min(m, rowPanels*(w+1)/workers*sgemmMR)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sgemmRows(&s.workers[w], bs, transA, a, lda, i0, i1, m, p0, kb, n, c, ldc, add)
		}()
	}
	sgemmRows(&s.workers[0], bs, transA, a, lda, 0, min(m, rowPanels/workers*sgemmMR), m, p0, kb, n, c, ldc, add)
	wg.Wait()
}

// sgemmAdd is what the sums of a depth block are added to: row i of a
// tile adds base[i*ld:], so c itself (ld = ldc) or one row for all (ld 0);
// a nil base adds nothing. With relu the stored values are max(·, 0).
type sgemmAdd struct {
	base []float32
	ld   int
	relu bool
}

// at returns the kernels' pointer to the addend of the tile at (i, j),
// nil for none.
func (ad sgemmAdd) at(i, j int) *float32 {
	if ad.base == nil {
		return nil
	}
	return &ad.base[i*ad.ld+j]
}

// sgemmRows computes rows [i0, i1) of one depth block [p0, p0+kb) of the
// product from B (packed, or in place where the AVX-512 kernels take all
// columns), plus add.
func sgemmRows(buf *sgemmBuf, bs sgemmB, transA bool, a []float32, lda, i0, i1, m, p0, kb, n int, c []float32, ldc int, add sgemmAdd) {
	const mr, nr = sgemmMR, sgemmNR
	buf.a = grow(buf.a, mr*kb)
	tile := buf.tile[:]
	zdone := 0 // columns of rows [i, i+mr) that a 12-row kernel has done
	for i := i0; i < i1; i += mr {
		rows := min(mr, m-i)
		// Six whole rows of A are read in place: of an untransposed A, six
		// rows; of a transposed one, six adjacent columns, stepping by lda
		// (up to sgemmStrideMax). The last, partial panel is copied first.
		ap, ldp, step := buf.a, kb, 1
		rows12 := haveSgemmZ && zdone == 0 && i+2*mr <= i1 // twelve rows in place
		j4 := 0                                            // columns the four-row kernel has done
		switch {
		case rows < mr || transA && lda > sgemmStrideMax:
			if rows == 4 && haveSgemmZ && (!transA || lda <= sgemmStrideMax) {
				// Four last rows in place (64 = 5·12 + 4: the weight
				// gradients of 64-wide layers), whole pairs of panels.
				aq, ldq, stq := a[min(i*lda+p0, len(a)):], lda, 1
				if transA {
					_ = a[(p0+kb-1)*lda+i+3]
					aq, ldq, stq = a[p0*lda+i:], 1, lda
				} else {
					_ = a[(i+3)*lda+p0+kb-1]
				}
				for ; j4+2*nr <= n; j4 += 2 * nr {
					_ = c[(i+3)*ldc+j4+2*nr-1]
					sgemmKernel4x32Z(kb, &aq[0], ldq, stq, bs.at(j4, kb), &c[i*ldc+j4], ldc, add.at(i, j4), add.ld, add.relu, bs.ld)
				}
			}
			if j4 < n {
				packA(ap, transA, a, lda, i, rows, p0, kb)
			}
			rows12 = false
		case transA:
			_ = a[(p0+kb-1)*lda+i+mr-1]
			if rows12 {
				_ = a[(p0+kb-1)*lda+i+2*mr-1]
			}
			ap, ldp, step = a[p0*lda+i:], 1, lda
		default:
			_ = a[(i+mr-1)*lda+p0+kb-1]
			if rows12 {
				_ = a[(i+2*mr-1)*lda+p0+kb-1]
			}
			ap, ldp = a[i*lda+p0:], lda
		}
		j := max(zdone, j4)
		zdone = 0
		if rows12 {
			for ; j+2*nr <= n; j += 2 * nr {
				_ = c[(i+2*mr-1)*ldc+j+2*nr-1]
				sgemmKernel12x32Z(kb, &ap[0], ldp, step, bs.at(j, kb), &c[i*ldc+j], ldc, add.at(i, j), add.ld, add.relu, bs.ld)
			}
			if j+nr <= n { // a last whole panel (a 16-column product's only one)
				_ = c[(i+2*mr-1)*ldc+j+nr-1]
				sgemmKernel12x16Z(kb, &ap[0], ldp, step, bs.at(j, kb), &c[i*ldc+j], ldc, add.at(i, j), add.ld, add.relu, bs.ld)
				j += nr
			}
			zdone = j
		}
		if haveSgemmZ {
			// Pairs of whole panels in AVX-512 registers; the rest below.
			for ; j+2*nr <= n; j += 2 * nr {
				if rows == mr {
					_ = c[(i+mr-1)*ldc+j+2*nr-1]
					sgemmKernel6x32Z(kb, &ap[0], ldp, step, bs.at(j, kb), &c[i*ldc+j], ldc, add.at(i, j), add.ld, add.relu, bs.ld)
					continue
				}
				// The last rows of A, copied and padded with zero rows:
				// the tile goes to a buffer, and its rows to c.
				sgemmKernel6x32Z(kb, &ap[0], ldp, step, bs.at(j, kb), &tile[0], 2*nr, nil, 0, false, bs.ld)
				storeTile(c, ldc, i, j, rows, 2*nr, tile[:], 2*nr, add)
			}
		}
		for ; j < n; j += nr {
			cols := min(nr, n-j)
			bp := bs.p[j*kb : (j+nr)*kb] // packed: in place, every column is a pair's
			if rows == mr && cols == nr {
				_ = c[(i+mr-1)*ldc+j+nr-1] // the kernel writes this far
				sgemmKernel6x16(kb, &ap[0], ldp, step, &bp[0], &c[i*ldc+j], ldc, add.at(i, j), add.ld, add.relu)
				continue
			}
			sgemmKernel6x16(kb, &ap[0], ldp, step, &bp[0], &tile[0], nr, nil, 0, false)
			storeTile(c, ldc, i, j, rows, cols, tile[:], nr, add)
		}
	}
}

// storeTile writes the rows×cols corner of tile (row stride ld), plus
// add, to c at (i, j).
func storeTile(c []float32, ldc, i, j, rows, cols int, tile []float32, ld int, add sgemmAdd) {
	for r := 0; r < rows; r++ {
		dst := c[(i+r)*ldc+j : (i+r)*ldc+j+cols]
		src := tile[r*ld : r*ld+cols]
		if add.base != nil {
			at := (i+r)*add.ld + j
			addVec(dst, src, add.base[at:at+cols])
		} else {
			copy(dst, src)
		}
		if add.relu {
			reluVec(dst)
		}
	}
}

// packA writes rows [i, i+rows) and columns [p0, p0+kb) of op(a) into ap
// as six rows of kb (zero beyond rows).
func packA(ap []float32, transA bool, a []float32, lda, i, rows, p0, kb int) {
	ap = ap[:sgemmMR*kb]
	if rows < sgemmMR {
		clear(ap[rows*kb:])
	}
	if transA { // op(a)[i+r, p] = a[p*lda + i+r]: six contiguous per p
		for p := 0; p < kb; p++ {
			for r, v := range a[(p0+p)*lda+i : (p0+p)*lda+i+rows] {
				ap[r*kb+p] = v
			}
		}
		return
	}
	for r := 0; r < rows; r++ { // op(a)[i+r, p] = a[(i+r)*lda + p]
		copy(ap[r*kb:(r+1)*kb], a[(i+r)*lda+p0:])
	}
}

// packB writes rows [p0, p0+kb) of op(b) (k×n) into bp as one kb×16 panel
// per 16 columns, zero beyond n.
func packB(bp []float32, transB bool, b []float32, ldb, p0, kb, n int) {
	const nr = sgemmNR
	for j := 0; j < n; j += nr {
		cols := min(nr, n-j)
		panel := bp[j*kb : (j+nr)*kb]
		if cols < nr {
			clear(panel)
		}
		if transB && cols == nr {
			packTransposed16(panel, b, (j*ldb)+p0, ldb, kb)
			continue
		}
		if transB { // op(b)[p, j+c] = b[(j+c)*ldb + p]
			for col := 0; col < cols; col++ {
				src := b[(j+col)*ldb+p0 : (j+col)*ldb+p0+kb]
				for p, v := range src {
					panel[p*nr+col] = v
				}
			}
			continue
		}
		if cols == nr { // whole panels in AVX moves, not a copy call per row
			_ = b[(p0+kb-1)*ldb+j+nr-1]
			packRows16AVX(&panel[0], &b[p0*ldb+j], ldb, kb)
			continue
		}
		for p := 0; p < kb; p++ { // op(b)[p, j+c] = b[p*ldb + j+c]
			copy(panel[p*nr:p*nr+cols], b[(p0+p)*ldb+j:(p0+p)*ldb+j+cols])
		}
	}
}

// packTransposed16 writes panel[p*16+c] = b[off+c*ldb+p] for p < kb,
// c < 16: a whole panel of a transposed B, in 16×16 register transposes
// where AVX-512 runs, else a panel row at a time from sixteen source rows
// read in step. The column-at-a-time loop stored every element to a
// different cache line: 2.7 µs for a 64×64 weight (the input gradients'
// dY·Wᵀ), 1.7% of the encoder's training step.
func packTransposed16(panel, b []float32, off, ldb, kb int) {
	_ = b[off+15*ldb+kb-1]
	_ = panel[kb*16-1]
	if k16 := kb &^ 15; haveSgemmZ && k16 > 0 {
		packTransposedZ(&panel[0], &b[off], ldb, k16)
		if k16 == kb {
			return
		}
		panel, off, kb = panel[k16*16:], off+k16, kb-k16
	}
	s0, s1, s2, s3 := b[off:off+kb], b[off+ldb:off+ldb+kb], b[off+2*ldb:off+2*ldb+kb], b[off+3*ldb:off+3*ldb+kb]
	s4, s5, s6, s7 := b[off+4*ldb:off+4*ldb+kb], b[off+5*ldb:off+5*ldb+kb], b[off+6*ldb:off+6*ldb+kb], b[off+7*ldb:off+7*ldb+kb]
	s8, s9, s10, s11 := b[off+8*ldb:off+8*ldb+kb], b[off+9*ldb:off+9*ldb+kb], b[off+10*ldb:off+10*ldb+kb], b[off+11*ldb:off+11*ldb+kb]
	s12, s13, s14, s15 := b[off+12*ldb:off+12*ldb+kb], b[off+13*ldb:off+13*ldb+kb], b[off+14*ldb:off+14*ldb+kb], b[off+15*ldb:off+15*ldb+kb]
	for p := range kb {
		r := (*[16]float32)(panel[p*16 : p*16+16])
		r[0], r[1], r[2], r[3] = s0[p], s1[p], s2[p], s3[p]
		r[4], r[5], r[6], r[7] = s4[p], s5[p], s6[p], s7[p]
		r[8], r[9], r[10], r[11] = s8[p], s9[p], s10[p], s11[p]
		r[12], r[13], r[14], r[15] = s12[p], s13[p], s14[p], s15[p]
	}
}
